/* ptmp.hpp: a header-only C++17 face of the ptmp C library (ptmp.h).
 *
 * Every handle is owned by an object (RAII: freed by its destructor; objects
 * move, they do not copy), and every error becomes a ptmp::Error exception
 * carrying the library's code and message. The sender and receiver have the
 * call shape of PTMP's ptmp::TPSender and ptmp::TPReceiver
 * (https://github.com/brettviren/ptmp): `sender(tpset)` or
 * `sender.send(tpset)`, and `receiver(tpset, timeout_ms)` or
 * `receiver.recv(tpset, timeout_ms)`, which returns false on a timeout. The
 * TPSet and TrigPrim classes have the accessors of PTMP's protobuf classes
 * (count(), set_count(), tps_size(), add_tps() ...), so PTMP code that fills
 * or reads sets compiles with few changes. docs/c-api.md shows a port.
 *
 * Threads: as in ptmp.h, one object is used by one thread at a time unless
 * a method says otherwise; different objects may be used on different
 * threads at once. */
#ifndef PTMP_HPP
#define PTMP_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ptmp.h"

namespace ptmp {

/// What every failed call throws: the C code (a PTMP_ERR_* value) and the
/// library's message naming what was wrong.
class Error : public std::runtime_error {
public:
    Error(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
    /// The PTMP_ERR_* code of the C call.
    int code() const noexcept { return code_; }

private:
    int code_;
};

namespace detail {

/// Throws for a negative return code, with this thread's message.
inline int check(int rc) {
    if (rc < 0) throw Error(rc, ptmp_last_error());
    return rc;
}

/// A std::string for a C call: one with a NUL byte inside would be cut
/// there without a word, so it is refused.
inline const char* cstr(const std::string& s, const char* what) {
    auto at = s.find('\0');
    if (at != std::string::npos)
        throw Error(PTMP_ERR_ARG, std::string(what) + " contains a NUL byte at offset " +
                                      std::to_string(at));
    return s.c_str();
}

/// Moves a handle out of `h`, leaving NULL.
template <class T> T* take(T*& h) noexcept { return std::exchange(h, nullptr); }

}  // namespace detail

/// One trigger primitive: the C struct, with the accessors of PTMP's
/// protobuf TrigPrim. Same layout as ptmp_trigprim, so a vector of them is
/// sent without a copy.
class TrigPrim : public ptmp_trigprim {
public:
    TrigPrim() : ptmp_trigprim{} {}
    TrigPrim(const ptmp_trigprim& p) : ptmp_trigprim(p) {}
    uint32_t channel() const { return ptmp_trigprim::channel; }
    void set_channel(uint32_t v) { ptmp_trigprim::channel = v; }
    uint64_t tstart() const { return ptmp_trigprim::tstart; }
    void set_tstart(uint64_t v) { ptmp_trigprim::tstart = v; }
    uint32_t tspan() const { return ptmp_trigprim::tspan; }
    void set_tspan(uint32_t v) { ptmp_trigprim::tspan = v; }
    uint32_t adcsum() const { return ptmp_trigprim::adcsum; }
    void set_adcsum(uint32_t v) { ptmp_trigprim::adcsum = v; }
    uint32_t adcpeak() const { return ptmp_trigprim::adcpeak; }
    void set_adcpeak(uint32_t v) { ptmp_trigprim::adcpeak = v; }
    uint32_t flags() const { return ptmp_trigprim::flags; }
    void set_flags(uint32_t v) { ptmp_trigprim::flags = v; }
};
static_assert(sizeof(TrigPrim) == sizeof(ptmp_trigprim), "TrigPrim adds no members");
static_assert(std::is_standard_layout<TrigPrim>::value, "TrigPrim is a plain struct");

/// A set of trigger primitives, with the accessors of PTMP's protobuf TPSet.
class TPSet {
public:
    uint32_t count() const { return count_; }
    void set_count(uint32_t v) { count_ = v; }
    uint32_t detid() const { return detid_; }
    void set_detid(uint32_t v) { detid_ = v; }
    int64_t created() const { return created_; }
    void set_created(int64_t v) { created_ = v; }
    uint64_t tstart() const { return tstart_; }
    void set_tstart(uint64_t v) { tstart_ = v; }
    uint32_t tspan() const { return tspan_; }
    void set_tspan(uint32_t v) { tspan_ = v; }
    uint32_t chanbeg() const { return chanbeg_; }
    void set_chanbeg(uint32_t v) { chanbeg_ = v; }
    uint32_t chanend() const { return chanend_; }
    void set_chanend(uint32_t v) { chanend_ = v; }
    uint32_t totaladc() const { return totaladc_; }
    void set_totaladc(uint32_t v) { totaladc_ = v; }

    int tps_size() const { return static_cast<int>(tps_.size()); }
    const TrigPrim& tps(int i) const { return tps_.at(static_cast<size_t>(i)); }
    TrigPrim* mutable_tps(int i) { return &tps_.at(static_cast<size_t>(i)); }
    /// Appends a zeroed primitive and returns it to fill (protobuf style).
    TrigPrim* add_tps() {
        tps_.emplace_back();
        return &tps_.back();
    }
    void clear_tps() { tps_.clear(); }
    /// Every field back to zero, no primitives (keeps the vector's memory).
    void Clear() {
        std::vector<TrigPrim> keep;
        keep.swap(tps_);
        *this = TPSet();
        keep.clear();
        tps_.swap(keep);
    }
    /// The primitives.
    const std::vector<TrigPrim>& tps() const { return tps_; }
    std::vector<TrigPrim>& tps() { return tps_; }

    /// The C struct for a send, pointing into this set (valid while it is
    /// unchanged).
    ptmp_tpset c_view() const {
        ptmp_tpset c{};
        c.count = count_;
        c.detid = detid_;
        c.created = created_;
        c.tstart = tstart_;
        c.tspan = tspan_;
        c.chanbeg = chanbeg_;
        c.chanend = chanend_;
        c.totaladc = totaladc_;
        // The library only reads through the pointer when sending.
        c.tps = tps_.empty() ? nullptr
                             : static_cast<ptmp_trigprim*>(const_cast<TrigPrim*>(tps_.data()));
        c.ntps = tps_.size();
        return c;
    }

    /// Copies a received C struct into this set.
    void assign(const ptmp_tpset& c) {
        count_ = c.count;
        detid_ = c.detid;
        created_ = c.created;
        tstart_ = c.tstart;
        tspan_ = c.tspan;
        chanbeg_ = c.chanbeg;
        chanend_ = c.chanend;
        totaladc_ = c.totaladc;
        tps_.assign(c.tps, c.tps + c.ntps);
    }

private:
    uint32_t count_ = 0, detid_ = 0;
    int64_t created_ = 0;
    uint64_t tstart_ = 0;
    uint32_t tspan_ = 0, chanbeg_ = 0, chanend_ = 0, totaladc_ = 0;
    std::vector<TrigPrim> tps_;
};

/// PTMP's names for the message classes (its protobuf `ptmp::data`
/// namespace), so code written against PTMP's headers compiles as is.
namespace data {
using TPSet = ::ptmp::TPSet;
using TrigPrim = ::ptmp::TrigPrim;
}  // namespace data

/// A sending socket from PTMP's JSON socket configuration, as PTMP's
/// TPSender.
class TPSender {
public:
    explicit TPSender(const std::string& config) {
        detail::check(ptmp_sender_new(detail::cstr(config, "config"), &h_));
    }
    ~TPSender() { ptmp_sender_free(h_); }
    TPSender(TPSender&& o) noexcept : h_(detail::take(o.h_)) {}
    TPSender& operator=(TPSender&& o) noexcept {
        if (this != &o) {
            ptmp_sender_free(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    TPSender(const TPSender&) = delete;
    TPSender& operator=(const TPSender&) = delete;

    /// Sends one TPSet (blocks at the high-water mark of PUSH and PAIR).
    void send(const TPSet& t) {
        ptmp_tpset c = t.c_view();
        detail::check(ptmp_sender_send(h_, &c));
    }
    /// Sends one TPSet given as the C struct.
    void send(const ptmp_tpset& t) { detail::check(ptmp_sender_send(h_, &t)); }
    /// Sends one TPSet given as its protobuf encoding (checked first).
    void send_bytes(const void* data, size_t len) {
        detail::check(ptmp_sender_send_bytes(h_, static_cast<const uint8_t*>(data), len));
    }
    /// Sends one message of raw frames, schema-blind.
    void send_frames(const std::vector<std::string>& frames) {
        std::vector<const uint8_t*> datas;
        std::vector<size_t> lens;
        datas.reserve(frames.size());
        lens.reserve(frames.size());
        for (const auto& f : frames) {
            datas.push_back(reinterpret_cast<const uint8_t*>(f.data()));
            lens.push_back(f.size());
        }
        detail::check(ptmp_sender_send_frames(h_, datas.data(), lens.data(), frames.size()));
    }
    /// PTMP's call shape: `sender(tpset)`.
    void operator()(const TPSet& t) { send(t); }
    /// Sends one TPSet, waiting at most `timeout_ms` for room: false, and
    /// nothing sent, when a PUSH or PAIR stayed at its high-water mark (or
    /// without a peer) or an shm PUSH ring stayed full that long.
    bool send_within(const TPSet& t, int timeout_ms) {
        ptmp_tpset c = t.c_view();
        return detail::check(ptmp_sender_send_within(h_, &c, timeout_ms)) == PTMP_OK;
    }
    /// Messages sent so far.
    uint64_t sent() const noexcept { return ptmp_sender_sent(h_); }
    /// A PUB over ZeroMQ: waits up to `timeout_ms` (-1: no limit) for `k`
    /// subscribers; false if fewer came. Throws for other sockets.
    bool wait_subscribers(size_t k, int timeout_ms = -1) {
        size_t seen = 0;
        return detail::check(ptmp_sender_wait_subscribers(h_, k, timeout_ms, &seen)) ==
               PTMP_OK;
    }
    /// Closes the sender, waiting (bounded by its linger) for what was sent
    /// to leave, and reports how many messages may not have reached a peer.
    /// The object is empty afterwards (its other calls throw).
    ptmp_delivery finish() {
        ptmp_delivery d{};
        detail::check(ptmp_sender_finish(detail::take(h_), &d));
        return d;
    }
    /// The `i`th bound address with a `*` port resolved; empty if none.
    std::string endpoint(size_t i = 0) const {
        const char* e = ptmp_sender_endpoint(h_, i);
        return e ? e : "";
    }
    /// The C handle, still owned by this object.
    ptmp_sender* handle() const noexcept { return h_; }

private:
    ptmp_sender* h_ = nullptr;
};

/// A receiving socket from PTMP's JSON socket configuration, as PTMP's
/// TPReceiver.
class TPReceiver {
public:
    explicit TPReceiver(const std::string& config) {
        detail::check(ptmp_receiver_new(detail::cstr(config, "config"), &h_));
    }
    ~TPReceiver() {
        ptmp_receiver_free(h_);
        ptmp_tpset_clear(&scratch_);
    }
    TPReceiver(TPReceiver&& o) noexcept : h_(detail::take(o.h_)), scratch_(o.scratch_) {
        o.scratch_ = ptmp_tpset{};
    }
    TPReceiver& operator=(TPReceiver&& o) noexcept {
        if (this != &o) {
            ptmp_receiver_free(h_);
            ptmp_tpset_clear(&scratch_);
            h_ = detail::take(o.h_);
            scratch_ = std::exchange(o.scratch_, ptmp_tpset{});
        }
        return *this;
    }
    TPReceiver(const TPReceiver&) = delete;
    TPReceiver& operator=(const TPReceiver&) = delete;

    /// Receives the next TPSet into `t`, waiting at most `timeout_ms` (-1:
    /// forever). False on a timeout, `t` untouched; a message that is not
    /// a TPSet throws (with PTMP_ERR_MESSAGE; receiving on is fine).
    bool recv(TPSet& t, int timeout_ms = -1) {
        if (detail::check(ptmp_receiver_recv(h_, &scratch_, timeout_ms)) == PTMP_TIMEOUT)
            return false;
        t.assign(scratch_);
        return true;
    }
    /// As recv(TPSet&), into a C struct (no copy of the primitives); the
    /// ownership rule of ptmp_receiver_recv holds for `t.tps`.
    bool recv(ptmp_tpset& t, int timeout_ms = -1) {
        return detail::check(ptmp_receiver_recv(h_, &t, timeout_ms)) != PTMP_TIMEOUT;
    }
    /// Receives one message as raw frames (copied into `frames`); false on
    /// a timeout. A TPSet's frame 1 is its protobuf encoding.
    bool recv_frames(std::vector<std::string>& frames, int timeout_ms = -1) {
        size_t n = 0;
        if (detail::check(ptmp_receiver_recv_frames(h_, timeout_ms, &n)) == PTMP_TIMEOUT)
            return false;
        frames.resize(n);
        for (size_t i = 0; i < n; ++i) {
            const uint8_t* d = nullptr;
            size_t len = 0;
            detail::check(ptmp_receiver_frame(h_, i, &d, &len));
            frames[i].assign(reinterpret_cast<const char*>(d), len);
        }
        return true;
    }
    /// PTMP's call shape: `receiver(tpset, timeout_ms)`.
    bool operator()(TPSet& t, int timeout_ms = -1) { return recv(t, timeout_ms); }
    /// The `i`th bound address with a `*` port resolved; empty if none.
    std::string endpoint(size_t i = 0) const {
        const char* e = ptmp_receiver_endpoint(h_, i);
        return e ? e : "";
    }
    /// Messages lost before they could be received (an shm SUB overrun by
    /// its writer; 0 over ZeroMQ).
    // The next message passed on to `to` as it came (between shm://
    // channels one copy, slot to slot); false on timeout.
    bool forward(TPSender& to, int timeout_ms = -1) {
        return detail::check(ptmp_receiver_forward(h_, to.handle(), timeout_ms)) == PTMP_OK;
    }
    uint64_t lost() const noexcept { return ptmp_receiver_lost(h_); }
    /// The C handle, still owned by this object.
    ptmp_receiver* handle() const noexcept { return h_; }

private:
    ptmp_receiver* h_ = nullptr;
    ptmp_tpset scratch_{};
};

/// What a shared-memory writer does when a reader is a whole ring behind.
enum class Policy : int { overwrite = PTMP_SHM_OVERWRITE, block = PTMP_SHM_BLOCK };
/// Where a new shared-memory reader starts.
enum class Start : int {
    next = PTMP_SHM_START_NEXT,
    newest = PTMP_SHM_START_NEWEST,
    oldest = PTMP_SHM_START_OLDEST
};

/// The one writer of a shared-memory channel.
class ShmWriter {
public:
    /// A slot lent to be written in place; published by commit(), given
    /// back unpublished if destroyed without it.
    class Loan {
    public:
        Loan(Loan&& o) noexcept
            : w_(detail::take(o.w_)), data_(o.data_), size_(o.size_) {}
        Loan& operator=(Loan&&) = delete;
        Loan(const Loan&) = delete;
        Loan& operator=(const Loan&) = delete;
        ~Loan() {
            if (w_) ptmp_shm_writer_abort(w_);
        }
        uint8_t* data() const noexcept { return data_; }
        size_t size() const noexcept { return size_; }
        /// Publishes the message; returns its sequence number.
        uint64_t commit() {
            if (!w_) throw Error(PTMP_ERR_STATE, "this loan was already committed");
            uint64_t seq = 0;
            detail::check(ptmp_shm_writer_commit(detail::take(w_), &seq));
            return seq;
        }

    private:
        friend class ShmWriter;
        Loan(ptmp_shm_writer* w, uint8_t* d, size_t n) : w_(w), data_(d), size_(n) {}
        ptmp_shm_writer* w_;
        uint8_t* data_;
        size_t size_;
    };

    ShmWriter(const std::string& name, size_t slots, size_t max_message,
              Policy policy = Policy::overwrite) {
        detail::check(ptmp_shm_writer_new(detail::cstr(name, "name"), slots, max_message,
                                          static_cast<int>(policy), &h_));
    }
    ~ShmWriter() { ptmp_shm_writer_free(h_); }
    ShmWriter(ShmWriter&& o) noexcept : h_(detail::take(o.h_)) {}
    ShmWriter& operator=(ShmWriter&& o) noexcept {
        if (this != &o) {
            ptmp_shm_writer_free(h_);
            h_ = detail::take(o.h_);
        }
        return *this;
    }
    ShmWriter(const ShmWriter&) = delete;
    ShmWriter& operator=(const ShmWriter&) = delete;

    /// Lends the next slot for a message of `len` bytes (zero-copy). The
    /// loan must be committed or destroyed before the next one; it must
    /// not outlive the writer.
    Loan loan(size_t len) {
        uint8_t* d = nullptr;
        detail::check(ptmp_shm_writer_loan(h_, len, &d));
        return Loan(h_, d, len);
    }
    /// Copies `len` bytes into the next slot and publishes them.
    uint64_t publish(const void* data, size_t len) {
        uint64_t seq = 0;
        detail::check(
            ptmp_shm_writer_publish(h_, static_cast<const uint8_t*>(data), len, &seq));
        return seq;
    }
    size_t max_message() const { return ptmp_shm_writer_max_message(h_); }
    ptmp_shm_writer* handle() const noexcept { return h_; }

private:
    ptmp_shm_writer* h_ = nullptr;
};

/// A reader of a shared-memory channel, looking at messages in place.
class ShmReader {
public:
    /// A message in its slot. Read data(), then ask valid(): only if it is
    /// true was what was read the whole message. Released by its
    /// destructor or by the reader's next view(); must not outlive the
    /// reader.
    class View {
    public:
        View(View&& o) noexcept : r_(detail::take(o.r_)), gen_(o.gen_), v_(o.v_) {}
        View& operator=(View&&) = delete;
        View(const View&) = delete;
        View& operator=(const View&) = delete;
        ~View() {
            if (current()) ptmp_shm_reader_release(r_->h_);
        }
        const uint8_t* data() const noexcept { return v_.data; }
        size_t size() const noexcept { return v_.len; }
        uint64_t seq() const noexcept { return v_.seq; }
        uint64_t lost() const noexcept { return v_.lost; }
        /// The seqlock check: true if the writer has not touched the slot
        /// since this view was taken. False too once the reader has moved
        /// on to a newer view.
        bool valid() const {
            return current() && detail::check(ptmp_shm_reader_valid(r_->h_)) == 1;
        }

    private:
        friend class ShmReader;
        View(ShmReader* r, uint64_t gen, ptmp_shm_view v) : r_(r), gen_(gen), v_(v) {}
        bool current() const noexcept { return r_ && r_->gen_ == gen_; }
        ShmReader* r_;
        uint64_t gen_;
        ptmp_shm_view v_;
    };

    /// Attaches to channel `name`, waiting up to `timeout_ms` for it to
    /// exist (-1: forever); throws Error(PTMP_TIMEOUT) if it does not.
    explicit ShmReader(const std::string& name, Start start = Start::next, int timeout_ms = 0) {
        int rc = detail::check(ptmp_shm_reader_new(detail::cstr(name, "name"),
                                                   static_cast<int>(start), timeout_ms, &h_));
        if (rc == PTMP_TIMEOUT)
            throw Error(PTMP_TIMEOUT, "no shared-memory channel \"" + name + "\" within " +
                                          std::to_string(timeout_ms) + " ms");
    }
    ~ShmReader() { ptmp_shm_reader_free(h_); }
    ShmReader(ShmReader&&) = delete;  // views point at their reader
    ShmReader(const ShmReader&) = delete;
    ShmReader& operator=(const ShmReader&) = delete;

    /// The next message in place, waiting up to `timeout_ms` (-1:
    /// forever); nothing on a timeout. Any earlier view is released.
    std::optional<View> view(int timeout_ms = -1) {
        ptmp_shm_view v{};
        ++gen_;
        if (detail::check(ptmp_shm_reader_view(h_, &v, timeout_ms)) == PTMP_TIMEOUT)
            return std::nullopt;
        return View(this, gen_, v);
    }
    /// Messages lost to overruns so far.
    uint64_t lost() const { return ptmp_shm_reader_lost(h_); }
    ptmp_shm_reader* handle() const noexcept { return h_; }

private:
    ptmp_shm_reader* h_ = nullptr;
    uint64_t gen_ = 0;
};

/// Removes a shared-memory channel's file (attached ends keep their
/// mapping).
inline void shm_remove(const std::string& name) {
    detail::check(ptmp_shm_remove(detail::cstr(name, "name")));
}

/// A dump file (czmqat format) read as TPSets.
class DumpReader {
public:
    explicit DumpReader(const std::string& path) {
        detail::check(ptmp_dump_reader_new(detail::cstr(path, "path"), &h_));
    }
    ~DumpReader() {
        ptmp_dump_reader_free(h_);
        ptmp_tpset_clear(&scratch_);
    }
    DumpReader(const DumpReader&) = delete;
    DumpReader& operator=(const DumpReader&) = delete;
    /// The next set; false at the end of the file.
    bool next(TPSet& t) {
        if (detail::check(ptmp_dump_reader_next(h_, &scratch_)) == PTMP_END) return false;
        t.assign(scratch_);
        return true;
    }

private:
    ptmp_dump_reader* h_ = nullptr;
    ptmp_tpset scratch_{};
};

/// A dump file (czmqat format) written from TPSets.
class DumpWriter {
public:
    explicit DumpWriter(const std::string& path) {
        detail::check(ptmp_dump_writer_new(detail::cstr(path, "path"), &h_));
    }
    ~DumpWriter() { ptmp_dump_writer_free(h_); }
    DumpWriter(const DumpWriter&) = delete;
    DumpWriter& operator=(const DumpWriter&) = delete;
    void write(const TPSet& t) {
        ptmp_tpset c = t.c_view();
        detail::check(ptmp_dump_writer_write(h_, &c));
    }
    /// Writes out what is buffered (the destructor does too, silently).
    void flush() { detail::check(ptmp_dump_writer_flush(h_)); }

private:
    ptmp_dump_writer* h_ = nullptr;
};

/// Agents of a ptmper configuration (`ptmp run`) running in the background
/// from construction; stopped and waited for by the destructor.
class Run {
public:
    /// `config`: JSON text starting with '{', or a JSON/Jsonnet path.
    /// `ttl_ms` >= 0 replaces the configuration's ttl.
    explicit Run(const std::string& config, int64_t ttl_ms = -1) {
        detail::check(ptmp_run_start(detail::cstr(config, "config"), ttl_ms, &h_));
    }
    /// A graph run and supervised in the background, as ptmp_graph_start:
    /// empty strings stand for NULL (the `ptmp` on the PATH, the default
    /// run directory, a one-host graph); `ttl_ms` < 0: no limit.
    static Run graph(const std::string& config, const std::string& ptmp_program = "",
                     const std::string& run_dir = "", const std::string& host = "",
                     int64_t ttl_ms = -1) {
        auto opt = [](const std::string& s, const char* what) {
            return s.empty() ? nullptr : detail::cstr(s, what);
        };
        ptmp_run* h = nullptr;
        detail::check(ptmp_graph_start(detail::cstr(config, "config"), opt(host, "host"),
                                       opt(run_dir, "run_dir"),
                                       opt(ptmp_program, "ptmp_program"), ttl_ms, &h));
        return Run(Handle{h});
    }
    ~Run() { ptmp_run_free(h_); }
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    /// Asks the agents (or the graph) to stop; any thread.
    void stop() { detail::check(ptmp_run_stop(h_)); }
    /// Waits up to `timeout_ms` (-1: until they end): true once they ended
    /// well, false if they still run; throws what they failed with.
    bool wait(int timeout_ms = -1) {
        return detail::check(ptmp_run_wait(h_, timeout_ms)) == PTMP_OK;
    }
    /// The C handle, still owned by this object: a signal handler may pass
    /// it to ptmp_run_stop.
    ptmp_run* handle() const noexcept { return h_; }

private:
    struct Handle {
        ptmp_run* h;
    };
    explicit Run(Handle h) : h_(h.h) {}
    ptmp_run* h_ = nullptr;
};

/// Turns presence on the network on for every socket made from then on,
/// so that configs may use names ("connect": ["name://NODE/PORT"] waits up
/// to `timeout_ms` for the name; "bind": ["name://NODE/PORT"] announces
/// it), in `group`, signed with the secret in `secret_file` if given. Once
/// per process: a second call throws (PTMP_ERR_STATE), as do a bad group,
/// timeout or secret file. Any thread, as ptmp_use_discovery.
inline void use_discovery(const std::string& group = "default",
                          const std::optional<std::string>& secret_file = std::nullopt,
                          std::uint32_t timeout_ms = 30000) {
    const char* key = secret_file ? detail::cstr(*secret_file, "secret_file") : nullptr;
    detail::check(ptmp_use_discovery(detail::cstr(group, "group"), key, timeout_ms));
}

/// Withdraws the names this process announced, so that peers see it leave
/// at once; call it before exiting. Any thread.
inline void withdraw_names() { detail::check(ptmp_withdraw_names()); }

/// How many names this process announces now. Any thread.
inline std::size_t announced_names() noexcept { return ptmp_announced_names(); }

/// Checks a graph configuration; returns the description `ptmp graph
/// check` prints.
inline std::string graph_check(const std::string& config) {
    char* d = nullptr;
    detail::check(ptmp_graph_check(detail::cstr(config, "config"), &d));
    std::string s = d ? d : "";
    ptmp_string_free(d);
    return s;
}

}  // namespace ptmp

#endif
