// The C++ wrapper end to end in one process: a sender and a receiver with
// PTMP's call shape, a shared-memory writer's loans and a reader's checked
// views, a dump file written and read back, agents run from a JSON
// configuration, a graph checked from a file, and the error paths (bad
// configuration, NUL in a string, misuse of a loan, a view, a handle).
// argv[1] is a scratch directory, argv[2] a graph configuration file.
// Prints "0 failures" and exits 0 only if every check held.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ptmp.hpp"

static int failures = 0;

#define EXPECT(cond)                                                  \
    do {                                                              \
        if (!(cond)) {                                                \
            std::fprintf(stderr, "line %d: check failed: %s\n", __LINE__, #cond); \
            failures++;                                               \
        }                                                             \
    } while (0)

// Runs `f`, which must throw ptmp::Error with `code` and a message
// containing `part`.
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

static ptmp::TPSet make_set(uint32_t i) {
    ptmp::TPSet t;
    t.set_count(i);
    t.set_detid(4);
    t.set_created(-5 - static_cast<int64_t>(i));
    t.set_tstart(1000000ULL * i);
    t.set_tspan(50);
    t.set_chanbeg(1);
    t.set_chanend(1 + i);
    t.set_totaladc(77 * i);
    for (uint32_t k = 0; k < i; ++k) {
        ptmp::TrigPrim* p = t.add_tps();
        p->set_channel(1 + k);
        p->set_tstart(1000000ULL * i + k);
        p->set_tspan(2);
        p->set_adcsum(300 + k);
        p->set_adcpeak(40 + k);
        p->set_flags(k & 1);
    }
    return t;
}

static bool same(const ptmp::TPSet& a, const ptmp::TPSet& b) {
    if (a.count() != b.count() || a.detid() != b.detid() || a.created() != b.created() ||
        a.tstart() != b.tstart() || a.tspan() != b.tspan() || a.chanbeg() != b.chanbeg() ||
        a.chanend() != b.chanend() || a.totaladc() != b.totaladc() ||
        a.tps_size() != b.tps_size())
        return false;
    for (int k = 0; k < a.tps_size(); ++k) {
        const ptmp::TrigPrim &p = a.tps(k), &q = b.tps(k);
        if (p.channel() != q.channel() || p.tstart() != q.tstart() || p.tspan() != q.tspan() ||
            p.adcsum() != q.adcsum() || p.adcpeak() != q.adcpeak() || p.flags() != q.flags())
            return false;
    }
    return true;
}

static void sockets() {
    ptmp::TPReceiver receiver(R"({"socket":{"type":"PULL","bind":["tcp://127.0.0.1:*"]}})");
    std::string ep = receiver.endpoint();
    EXPECT(ep.rfind("tcp://127.0.0.1:", 0) == 0 && ep.back() != '*');
    EXPECT(receiver.endpoint(1).empty());
    ptmp::TPSender sender(R"({"socket":{"type":"PUSH","connect":[")" + ep + R"("]}})");
    // Handles move; the moved-from object holds nothing.
    ptmp::TPSender moved(std::move(sender));
    EXPECT(sender.handle() == nullptr);
    for (uint32_t i = 0; i < 10; ++i) moved(make_set(i));  // PTMP's call shape
    ptmp::TPSet got;
    for (uint32_t i = 0; i < 10; ++i) {
        EXPECT(receiver(got, 5000));
        EXPECT(same(got, make_set(i)));
    }
    // A C struct received without the copy into a TPSet.
    moved.send(make_set(3));
    ptmp_tpset c{};
    EXPECT(receiver.recv(c, 5000));
    EXPECT(c.count == 3 && c.ntps == 3 && c.tps[2].channel == 3);
    ptmp_tpset_clear(&c);
    EXPECT(!receiver.recv(got, 50));
    // Garbage bytes are refused before they are sent.
    EXPECT_ERROR(PTMP_ERR_ARG, "not an encoded TPSet", moved.send_bytes("\xff\xff", 2));
    // Raw frames, and a TPSet seen raw.
    moved.send_frames({"a", "", std::string("b\0c", 3)});
    std::vector<std::string> frames;
    EXPECT(receiver.recv_frames(frames, 5000));
    EXPECT(frames.size() == 3 && frames[0] == "a" && frames[1].empty() &&
           frames[2] == std::string("b\0c", 3));
    moved.send(make_set(5));
    EXPECT(receiver.recv_frames(frames, 5000) && frames.size() == 2);
    moved.send_bytes(frames[1].data(), frames[1].size());
    EXPECT(receiver.recv(got, 5000) && same(got, make_set(5)));
    EXPECT(!receiver.recv_frames(frames, 10));
    // A message passed on as it came, to a second pair of sockets.
    ptmp::TPReceiver far(R"({"socket":{"type":"PULL","bind":["inproc://cxx-forward"]}})");
    ptmp::TPSender on(R"({"socket":{"type":"PUSH","connect":["inproc://cxx-forward"]}})");
    moved.send(make_set(6));
    EXPECT(receiver.forward(on, 5000));
    EXPECT(far.recv(got, 5000) && same(got, make_set(6)));
    EXPECT(!receiver.forward(on, 10));
    // Using a moved-from object is an error with a message, not a crash.
    EXPECT_ERROR(PTMP_ERR_NULL, "sender is NULL", sender.send(make_set(1)));
}

// The sender's options: a bounded send with no peer, the count sent, the
// delivery report (the object is empty after it), a PUB's subscriber wait,
// a receiver's lost count; a graph started in the background (its run
// directory under `dir`) whose part program does not exist fails in its
// wait.
static void sender_options(const std::string& dir) {
    ptmp::TPSender lonely(R"({"socket":{"type":"PUSH","bind":["tcp://127.0.0.1:*"]}})");
    EXPECT(!lonely.send_within(make_set(1), 20));
    EXPECT(lonely.sent() == 0);

    ptmp::TPReceiver rx(R"({"socket":{"type":"PULL","bind":["tcp://127.0.0.1:*"]}})");
    ptmp::TPSender tx(R"({"socket":{"type":"PUSH","connect":[")" + rx.endpoint() + R"("]}})");
    EXPECT(tx.send_within(make_set(2), 5000));
    EXPECT(tx.sent() == 1);
    ptmp_delivery d = tx.finish();
    EXPECT(d.sent == 1 && d.undelivered_kind == PTMP_UNDELIVERED_NONE);
    EXPECT_ERROR(PTMP_ERR_NULL, "sender", tx.send(make_set(3)));
    ptmp::TPSet got;
    EXPECT(rx.recv(got, 5000) && same(got, make_set(2)));
    EXPECT(rx.lost() == 0);

    ptmp::TPSender pub(R"({"socket":{"type":"PUB","bind":["tcp://127.0.0.1:*"]}})");
    EXPECT(!pub.wait_subscribers(1, 20));
    ptmp::TPReceiver sub(R"({"socket":{"type":"SUB","connect":[")" + pub.endpoint() + R"("]}})");
    EXPECT(pub.wait_subscribers(1, 10000));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "subscribers", lonely.wait_subscribers(1, 10));

    const std::string graph =
        R"({"name": "cpp-graph", "nodes": [)"
        R"({"name": "src", "type": "source", "data": {"count": 10, "rate": 1000}},)"
        R"({"name": "sink", "type": "sink", "data": {}}],)"
        R"("edges": [{"from": "src.out", "to": "sink.in", "pattern": "pushpull"}]})";
    ptmp::Run run = ptmp::Run::graph(graph, "/nonexistent/ptmp", dir + "/graph-run", "", 10000);
    EXPECT(run.handle() != nullptr);
    EXPECT_ERROR(PTMP_ERR_RUN, "start a part", run.wait(60000));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "nodes", ptmp::Run::graph(R"({"nodes": 3})"));
}

static void shared_memory(const std::string& tag) {
    const std::string name = "cxx-selftest-" + tag;
    ptmp::ShmWriter w(name, 4, 1 << 16);
    EXPECT(w.max_message() == (1 << 16));
    ptmp::ShmReader r(name, ptmp::Start::next, 1000);
    {
        auto loan = w.loan(1000);
        EXPECT(loan.size() == 1000);
        std::memset(loan.data(), 0xab, loan.size());
        EXPECT(loan.commit() == 0);
        EXPECT_ERROR(PTMP_ERR_STATE, "already committed", loan.commit());
    }
    {
        auto loan = w.loan(10);
        // A second loan while one is open is refused, naming why.
        EXPECT_ERROR(PTMP_ERR_STATE, "a loan is open", w.loan(10));
        EXPECT_ERROR(PTMP_ERR_STATE, "a loan is open", w.publish("x", 1));
        // Dropped without commit: nothing is published.
    }
    EXPECT(w.publish("hello", 5) == 1);
    EXPECT_ERROR(PTMP_ERR_ARG, "max", w.loan(1 << 17));
    {
        auto v = r.view(1000);
        EXPECT(v.has_value());
        EXPECT(v->seq() == 0 && v->size() == 1000 && v->data()[999] == 0xab);
        EXPECT(v->valid());
        auto v2 = r.view(1000);
        EXPECT(v2 && v2->seq() == 1 && std::memcmp(v2->data(), "hello", 5) == 0);
        // The older view is superseded: no longer vouched for.
        EXPECT(!v->valid());
        EXPECT(v2->valid());
    }
    EXPECT(!r.view(20).has_value());
    // Overwrite: the writer laps a view that is held, and the seqlock check
    // says so.
    w.publish("a", 1);
    auto v = r.view(1000);
    EXPECT(v && v->valid());
    for (int i = 0; i < 5; ++i) w.publish("bbbb", 4);
    EXPECT(v && !v->valid());
    // A channel has one writer; another shape is refused naming both.
    EXPECT_ERROR(PTMP_ERR_TRANSPORT, "writer", ptmp::ShmWriter(name, 4, 1 << 16));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "asked for 4 of 64", ptmp::ShmWriter(name, 4, 64));
    EXPECT_ERROR(PTMP_TIMEOUT, "no shared-memory channel",
                 ptmp::ShmReader("cxx-nothing-" + tag, ptmp::Start::next, 20));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "", ptmp::ShmWriter("bad/name", 4, 64));
    EXPECT_ERROR(PTMP_ERR_ARG, "NUL", ptmp::ShmWriter(std::string("a\0b", 3), 4, 64));
    ptmp::shm_remove(name);
    EXPECT_ERROR(PTMP_ERR_TRANSPORT, name.c_str(), ptmp::shm_remove(name));
}

static void dump_and_agents(const std::string& dir) {
    const std::string in = dir + "/in.dump", out = dir + "/out.dump";
    {
        ptmp::DumpWriter d(in);
        for (uint32_t i = 0; i < 6; ++i) d.write(make_set(i));
        d.flush();
    }
    {
        ptmp::DumpReader d(in);
        ptmp::TPSet t;
        uint32_t n = 0;
        while (d.next(t)) EXPECT(same(t, make_set(n++)));
        EXPECT(n == 6);
    }
    // czmqat agents copy the file through a socket into another file.
    const std::string cfg =
        R"({"ttl": 1.5, "proxies": [
          {"name": "replay", "type": "czmqat", "data": {"ifile": ")" + in + R"(",
            "output": {"socket": {"type": "PUSH", "bind": ["inproc://cxx-run"]}}}},
          {"name": "record", "type": "czmqat", "data": {"ofile": ")" + out + R"(",
            "input": {"socket": {"type": "PULL", "connect": ["inproc://cxx-run"]}}}}]})";
    {
        ptmp::Run run(cfg);
        EXPECT(run.wait(20000));
    }
    {
        ptmp::DumpReader d(out);
        ptmp::TPSet t;
        uint32_t n = 0;
        while (d.next(t)) EXPECT(same(t, make_set(n++)));
        EXPECT(n == 6);
    }
    // Stopped early from here: ends well, and at once.
    {
        ptmp::Run run(cfg, 600000);
        EXPECT(!run.wait(10));
        run.stop();
        EXPECT(run.wait(20000));
    }
    EXPECT_ERROR(PTMP_ERR_IO, "missing.dump: cannot open", ptmp::DumpReader(dir + "/missing.dump"));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "input = (missing)",
                 ptmp::Run(R"({"proxies":[{"type":"zipper","data":{"sync_time":"soon"}}]})"));
    EXPECT_ERROR(PTMP_ERR_IO, "no such file", ptmp::Run(dir + "/missing.jsonnet"));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "(config)", ptmp::Run("{\"ttl\": "));
}

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: selftest SCRATCH_DIR GRAPH_CONFIG\n");
        return 2;
    }
    try {
        sockets();
        sender_options(argv[1]);
        shared_memory(std::to_string(getpid()));
        dump_and_agents(argv[1]);
        std::string d = ptmp::graph_check(argv[2]);
        EXPECT(d.find("nodes") != std::string::npos);
    } catch (const ptmp::Error& e) {
        std::fprintf(stderr, "unexpected ptmp error %d: %s\n", e.code(), e.what());
        failures++;
    }
    // Bad configurations name the key and the value.
    EXPECT_ERROR(PTMP_ERR_CONFIG, "PUSHY",
                 ptmp::TPSender(R"({"socket":{"type":"PUSHY","bind":["tcp://127.0.0.1:*"]}})"));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "hwm",
                 ptmp::TPReceiver(R"({"socket":{"type":"PULL","bind":["inproc://x"],"hwm":"lots"}})"));
    // A NUL inside a std::string would cut it short: refused, with where.
    EXPECT_ERROR(PTMP_ERR_ARG, "NUL byte at offset 2",
                 ptmp::TPSender(std::string("{}\0{\"socket\":{}}", 16)));
    EXPECT_ERROR(PTMP_ERR_CONFIG, "", ptmp::graph_check(R"({"nodes": 3})"));
    std::printf("%d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
