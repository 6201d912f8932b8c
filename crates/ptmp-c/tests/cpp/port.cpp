// A PTMP sender and receiver ported to ptmp: the code is written against
// PTMP's C++ API (ptmp::TPSender, ptmp::TPReceiver, ptmp::data::TPSet with
// its protobuf accessors); the port changed only the #include lines.
// docs/c-api.md shows it; the install test builds it with pkg-config's
// flags and with CMake, and runs it.
#include <cstdio>
#include <string>

// Was: #include "ptmp/api.h" and #include "ptmp/data.h"
#include "ptmp.hpp"

int main() {
    const std::string sconfig = R"({"socket":{"type":"PUSH","bind":["inproc://port"]}})";
    const std::string rconfig = R"({"socket":{"type":"PULL","connect":["inproc://port"]}})";
    ptmp::TPSender send(sconfig);
    ptmp::TPReceiver recv(rconfig);

    for (int i = 0; i < 10; ++i) {
        ptmp::data::TPSet tps;
        tps.set_count(i);
        tps.set_detid(42);
        tps.set_tstart(1000 * i);
        for (int c = 0; c < 3; ++c) {
            auto* tp = tps.add_tps();
            tp->set_channel(c);
            tp->set_tstart(1000 * i + c);
            tp->set_adcsum(100 + c);
        }
        send(tps);
    }

    int got = 0;
    ptmp::data::TPSet tps;
    while (recv(tps, 500)) {  // false on a timeout, as in PTMP
        if (tps.count() != static_cast<uint32_t>(got) || tps.tps_size() != 3 ||
            tps.tps(2).adcsum() != 102) {
            std::fprintf(stderr, "set %d is wrong\n", got);
            return 1;
        }
        ++got;
    }
    std::printf("ported: received %d TPSets\n", got);
    return got == 10 ? 0 : 1;
}
