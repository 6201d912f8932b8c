// Receives N TPSets with the PTMP call shape (`receiver(tpset, timeout)`)
// from the socket configuration in argv[1], checks every field against
// what the Python sender in python/tests/test_c_interop.py derives from
// the set's number, then expects a timeout. Exits 0 only if all held.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ptmp.hpp"

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            std::fprintf(stderr, "set %u: check failed: %s\n", i, #cond);        \
            return 1;                                                            \
        }                                                                        \
    } while (0)

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: receiver CONFIG N\n");
        return 2;
    }
    unsigned n = static_cast<unsigned>(std::atoi(argv[2]));
    try {
        ptmp::TPReceiver receiver(argv[1]);
        ptmp::TPSet tps;
        unsigned i = 0;
        for (; i < n; ++i) {
            if (!receiver(tps, 20000)) {
                std::fprintf(stderr, "set %u did not come\n", i);
                return 1;
            }
            unsigned ntps = i % 7;
            CHECK(tps.count() == i);
            CHECK(tps.detid() == 11);
            CHECK(tps.created() == 1700000000000000LL + i);
            CHECK(tps.tstart() == 7000000000ULL + 25ULL * i);
            CHECK(tps.tspan() == 25);
            CHECK(tps.chanbeg() == 5);
            CHECK(tps.chanend() == 5 + ntps);
            CHECK(tps.totaladc() == 1000 + i);
            CHECK(tps.tps_size() == static_cast<int>(ntps));
            for (int k = 0; k < tps.tps_size(); ++k) {
                const ptmp::TrigPrim& p = tps.tps(k);
                CHECK(p.channel() == 5u + k);
                CHECK(p.tstart() == 7000000000ULL + 25ULL * i + k);
                CHECK(p.tspan() == 3);
                CHECK(p.adcsum() == 10u * k);
                CHECK(p.adcpeak() == 0xfffffff0u + k);
                CHECK(p.flags() == i % 2);
            }
        }
        CHECK(!receiver.recv(tps, 200));  // a timeout is false, no throw
        CHECK(tps.count() == n - 1);       // and leaves the set alone
        std::printf("received %u, then a timeout\n", n);
    } catch (const ptmp::Error& e) {
        std::fprintf(stderr, "ptmp error %d: %s\n", e.code(), e.what());
        return 1;
    }
    return 0;
}
