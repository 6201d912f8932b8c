// Presence from C++: ptmp::use_discovery's refusals (each a ptmp::Error
// with the C code and message), then a sender bound by name and a
// receiver connected by name in one process. argv[1] is the group.
// Prints "0 failures" and exits 0 only if every check held.
#include <cstdio>
#include <cstring>
#include <string>

#include "ptmp.hpp"

static int failures = 0;

#define EXPECT(cond)                                                              \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::fprintf(stderr, "line %d: check failed: %s\n", __LINE__, #cond); \
            failures++;                                                           \
        }                                                                         \
    } while (0)

template <class F>
static void expect_error(int line, int code, const char* part, F f) {
    try {
        f();
        std::fprintf(stderr, "line %d: no exception\n", line);
        failures++;
    } catch (const ptmp::Error& e) {
        std::printf("line %d: error %d: %s\n", line, e.code(), e.what());
        if (e.code() != code || std::strstr(e.what(), part) == nullptr) {
            std::fprintf(stderr, "line %d: wanted code %d with \"%s\"\n", line, code, part);
            failures++;
        }
    }
}
#define EXPECT_ERROR(code, part, ...) expect_error(__LINE__, code, part, [&] { __VA_ARGS__; })

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: names GROUP\n");
        return 2;
    }
    const std::string group = argv[1];
    EXPECT_ERROR(PTMP_ERR_ARG, "NUL byte at offset 1", ptmp::use_discovery(std::string("g\0h", 3)));
    EXPECT_ERROR(PTMP_ERR_ARG, "group is empty", ptmp::use_discovery(""));
    EXPECT_ERROR(PTMP_ERR_ARG, "timeout_ms 0", ptmp::use_discovery(group, std::nullopt, 0));
    EXPECT_ERROR(PTMP_ERR_IO, "/nonexistent/key", ptmp::use_discovery(group, "/nonexistent/key"));

    ptmp::use_discovery(group, std::nullopt, 20000);
    EXPECT_ERROR(PTMP_ERR_STATE, "already on", ptmp::use_discovery(group));
    EXPECT(ptmp::announced_names() == 0);

    {
        ptmp::TPSender send(R"({"socket":{"type":"PUSH","bind":["name://cpp/out"]}})");
        EXPECT(ptmp::announced_names() == 1);
        ptmp::TPReceiver recv(R"({"socket":{"type":"PULL","connect":["name://cpp/out"]}})");
        const int n = 20;
        for (int i = 0; i < n; ++i) {
            ptmp::TPSet t;
            t.set_count(i);
            t.set_detid(3);
            send(t);
        }
        int got = 0;
        ptmp::TPSet t;
        while (got < n && recv(t, 10000)) {
            EXPECT(t.count() == static_cast<uint32_t>(got));
            got++;
        }
        std::printf("received %d by name\n", got);
        EXPECT(got == n);
    }
    ptmp::withdraw_names();
    EXPECT(ptmp::announced_names() == 0);
    std::printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
