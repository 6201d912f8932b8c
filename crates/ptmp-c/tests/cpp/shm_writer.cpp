// Creates shared-memory channel argv[1] (PTMP_SHM_BLOCK, so no frame is
// lost to a slow reader) for frames of argv[3] bytes, says "ready", waits
// for a line on stdin (the reader has attached), then writes argv[2]
// frames in place through loans: frame f holds the 32-bit words
// f * 1000003 + k. The Python reader checks them through NumPy views.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "ptmp.hpp"

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: shm_writer NAME FRAMES BYTES\n");
        return 2;
    }
    const std::string name = argv[1];
    const uint32_t frames = static_cast<uint32_t>(std::atoi(argv[2]));
    const size_t bytes = static_cast<size_t>(std::atol(argv[3]));
    try {
        ptmp::ShmWriter w(name, 4, bytes, ptmp::Policy::block);
        std::printf("ready %zu\n", w.max_message());
        std::fflush(stdout);
        std::string line;
        std::getline(std::cin, line);
        for (uint32_t f = 0; f < frames; ++f) {
            ptmp::ShmWriter::Loan loan = w.loan(bytes);
            // Filled in place: the frame is never built anywhere else.
            const size_t words = loan.size() / 4;
            for (size_t k = 0; k < words; ++k) {
                uint32_t v = f * 1000003u + static_cast<uint32_t>(k);
                std::memcpy(loan.data() + 4 * k, &v, 4);
            }
            uint64_t seq = loan.commit();
            if (seq != f) {
                std::fprintf(stderr, "frame %u got sequence number %llu\n", f,
                             static_cast<unsigned long long>(seq));
                return 1;
            }
        }
        std::printf("wrote %u\n", frames);
        std::fflush(stdout);
        // Stay until told, so the channel keeps its writer while read.
        std::getline(std::cin, line);
    } catch (const ptmp::Error& e) {
        std::fprintf(stderr, "ptmp error %d: %s\n", e.code(), e.what());
        return 1;
    }
    return 0;
}
