// The selection policy (core/selection.hpp) through the public C++ API: kernel="auto"
// never returns a candidate whose result is wrong or that throws, even when it is the
// fastest; the tuning table refuses every entry the policy would not choose itself; the
// accuracy request never admits a weaker precision class; a vendor baseline keeps a
// class against a candidate within the tie margin; a candidate whose library's threads
// spin after a call is timed apart from the others; a choice is provisional until its
// second opinion, which corrects a disturbed first tournament and survives a disturbed
// second one.
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "core/backend.hpp"
#include "core/host_kernel.hpp"
#include "core/registry.hpp"
#include "core/selection.hpp"
#include "test_support.hpp"

using namespace fastgemm;

namespace {

// An auto candidate of this test in `backend` (which must exist).
void add_test_kernel(const char* name, const char* backend, int step, bool baseline, HostGemm fn,
                     const char* description) {
    KernelInfo info;
    info.name = name;
    info.backend = backend;
    info.ladder_step = step;
    info.baseline = baseline;
    info.auto_candidate = true;
    info.source = "tests/cpp/test_selection.cpp";
    info.description = description;
    Registry::global().add_kernel(std::make_unique<HostKernel>(std::move(info), fn));
}

// One kernel="auto" call of `backend` on random c.M x c.N x c.K operands from `seed`:
// the name of the kernel that ran, its result checked against float64.
std::string auto_call(const char* backend, const test::Case& c, uint64_t seed) {
    Context ctx(backend);
    test::Operands o(c, seed);
    std::vector<float> C = test::initial_c(c, o);
    const KernelInfo& k = ctx.sgemm(Trans::N, Trans::N, c.M, c.N, c.K, 1.0f, o.A.data(), c.lda(), o.B.data(),
                                    c.ldb(), 0.0f, C.data(), c.ldc());
    CHECK(test::rel_err(c, o, C) < 1e-5, "the result of " << backend << "/" << k.name << ": rel err "
                                                          << test::rel_err(c, o, C));
    return k.name;
}

// A backend of three candidates whose times the test sets: a vendor baseline, a
// challenger, and a slow one that the backend prefers (the highest rung), so that the
// baseline's margin, not the preferred candidate's, decides a tie between the other two.
struct TieTimes {
    double baseline_s = 0.0, challenger_s = 0.0, preferred_s = 0.0;
};
TieTimes& tie_times() {
    static TieTimes t;
    return t;
}

// A correct product (plain row-major, beta = 0 or not), then a busy wait until `seconds`
// have passed since the call began: a time no scheduler can shorten, only lengthen.
void product_taking(double seconds, const Problem& p, const float* A, const float* B, float* C) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (int64_t i = 0; i < p.M; ++i)
        for (int64_t j = 0; j < p.N; ++j) {
            double sum = 0.0;
            for (int64_t k = 0; k < p.K; ++k) sum += double(A[i * p.lda + k]) * double(B[k * p.ldb + j]);
            float& c = C[i * p.ldc + j];
            c = float(p.alpha * sum + (p.beta == 0.0f ? 0.0 : double(p.beta) * c));
        }
    while (std::chrono::steady_clock::now() < until) {
    }
}
void tie_baseline(const Problem& p, const float* A, const float* B, float* C) {
    product_taking(tie_times().baseline_s, p, A, B, C);
}
void tie_challenger(const Problem& p, const float* A, const float* B, float* C) {
    product_taking(tie_times().challenger_s, p, A, B, C);
}
void tie_preferred(const Problem& p, const float* A, const float* B, float* C) {
    product_taking(tie_times().preferred_s, p, A, B, C);
}

class TieBackend : public Backend {
public:
    std::string name() const override { return "tie"; }
    BackendStatus status() const override {
        BackendStatus s;
        s.name = "tie", s.available = true, s.device = "the test's own timings";
        return s;
    }
    int auto_priority() const override { return 0; }  // never joins backend="auto"
};


// The vendor baseline keeps a class against a candidate less than 3% faster (a
// difference one noisy round can fake) and loses it to one clearly faster.
void baselines_keep_a_tie() {
    Registry::global().add_backend(std::make_unique<TieBackend>());
    const char* what = "test candidate with a set time";
    add_test_kernel("tie_baseline", "tie", 0, true, tie_baseline, what);
    add_test_kernel("tie_challenger", "tie", 1, false, tie_challenger, what);
    add_test_kernel("tie_preferred", "tie", 2, false, tie_preferred, what);
    // Times of a fraction of a millisecond: the tournament's budget then allows all five
    // rounds, each run is rarely preempted, and the fastest round is what counts.
    auto winner = [&](double challenger_s) {
        clear_tuning_table();
        tie_times() = {4e-4, challenger_s, 8e-4};
        return auto_call("tie", test::Case{8, 8, 8}, 5);
    };
    // 0.5% faster: inside the margin, with 2.5% of slack for a scheduler's delays.
    CHECK(winner(4e-4 * 0.995) == "tie_baseline", "a challenger 0.5% faster took the baseline's class");
    // 20% faster: outside it, with 17% of slack (60 us a call) for preemption.
    CHECK(winner(4e-4 * 0.80) == "tie_challenger", "a challenger 20% faster did not win");
    clear_tuning_table();
}

// Two auto candidates that are faster than anything real: one returns without writing
// C, one throws.
void does_nothing(const Problem&, const float*, const float*, float*) {}
void throws(const Problem&, const float*, const float*, float*) { throw KernelError("device lost"); }

void add_impostor(const char* name, HostGemm fn) {
    // The highest rung: first in line when timing is off.
    add_test_kernel(name, "cpu", 99, false, fn, "test impostor");
}

void wrong_or_throwing_candidates_never_win() {
    clear_tuning_table();
    add_impostor("impostor_noop", does_nothing);
    add_impostor("impostor_throw", throws);
    for (int64_t n : {5, 40, 130}) {
        const test::Case c{n, n + 3, n + 1};
        const std::string chosen = auto_call("cpu", c, uint64_t(7 + n));
        CHECK(chosen.rfind("impostor", 0) != 0, "auto chose " << chosen << " at " << n);
        // Later calls of the class recall the same (verified) choice.
        const std::string again = auto_call("cpu", c, uint64_t(7 + n));
        CHECK(again == chosen, "the class changed kernel: " << chosen << " then " << again);
    }
    bool noop = false, thrown = false;
    for (const std::string& r : tuning_rejections()) {
        noop |= r.find("cpu/impostor_noop: result failed") != std::string::npos;
        thrown |= r.find("cpu/impostor_throw: device lost") != std::string::npos;
    }
    CHECK(noop && thrown, "both impostors are on the rejection log");
    // Each tuning is on the record: the winner among the timed, the refused left out.
    const std::vector<TuningRecord> records = tuning_records();
    CHECK(!records.empty(), "the tunings are recorded");
    for (const TuningRecord& r : records) {
        bool winner_timed = false;
        for (const auto& [name, seconds] : r.seconds) {
            winner_timed |= name == r.winner;
            CHECK(name.find("impostor_noop") == std::string::npos && name.find("impostor_throw") == std::string::npos,
                  "a refused candidate's time is on the record: " << name);
            CHECK(seconds > 0.0, "a candidate's time is positive: " << name << " " << seconds);
        }
        CHECK(winner_timed, "the winner of " << r.shape_class << " is among the timed candidates");
    }
}

void loaded_entries_are_validated() {
    clear_tuning_table();
    const std::map<std::string, std::string> entries = {
        {"cpu|fp32|nn|beta0|64x64x64", "direct"},          // valid
        {"cpu|fp32|nt|beta0|64x64x64", "direct_dot"},      // valid: A @ B^T
        {"auto|fp32|nn|beta0|8x8x8", "cpu/gemv"},          // gemv refuses 8x8x8
        {"auto|fp32|nn|beta|8x8x8", "cpu/direct"},         // valid
        {"cpu|fp32|nn|beta0|32x32x32", "direct_dot"},      // needs trans_b
        {"cpu|fp32|nn|beta0|16x16x16", "ikj@O3fm"},        // -ffast-math: never a candidate
        {"cpu|fp32|nn|beta0|16x16x32", "kji"},             // a teaching loop, not a candidate
        {"cpu|fp32|nn|beta0|16x16x64", "no_such_kernel"},  // unknown kernel
        {"cpu|fp32|nn|beta0|63x64x64", "direct"},          // not a power of two
        {"cpu|fp33|nn|beta0|64x64x64", "direct"},          // unknown accuracy
        {"gpu|fp32|nn|beta0|64x64x64", "direct"},          // unknown backend
        {"cpu|fp32|nx|beta0|64x64x64", "direct"},          // bad transposes
        {"cpu|fp32|nn|beta0|64x64", "direct"},             // two dimensions
        {"cpu|fp32|nn|beta0|64x64x64|extra", "direct"},    // six fields
        {"auto|fp32|nn|beta0|16x16x16", "direct"},         // auto needs backend/kernel
        {"", ""},
    };
    const int discarded = load_tuning_table(entries);
    CHECK(discarded == int(entries.size()) - 3, "discarded " << discarded << " of " << entries.size());
    const auto kept = tuning_table();
    CHECK(kept.size() == 3 && kept.at("cpu|fp32|nn|beta0|64x64x64") == "direct" &&
              kept.at("auto|fp32|nn|beta|8x8x8") == "cpu/direct",
          "kept " << kept.size() << " entries");

    // A kept entry is what auto runs for a member of its class.
    const std::string ran = auto_call("cpu", test::Case{60, 50, 40}, 3);
    CHECK(ran == "direct", "the loaded choice ran: " << ran);
}

// A leading dimension past 2^31 (a row of A never read past its first, a view into a
// larger buffer) is legal; the 32-bit BLAS cannot take it, so auto must not offer it the
// problem, even where it holds the class.
void auto_never_hands_a_32_bit_blas_a_64_bit_leading_dimension() {
    clear_tuning_table();
    // The BLAS holds the class (as a tournament may have decided, or a saved table).
    const bool has_blas = load_tuning_table({{"cpu|fp32|nn|beta0|1x512x512", "openblas"}}) == 0;
    Context ctx("cpu");
    const int64_t K = 512, N = 512;
    std::vector<float> A(K, 0.5f), B(size_t(K * N), 0.25f), C(N, -1.0f);
    for (const int64_t lda : {K, (int64_t(1) << 32) + 64}) {
        std::fill(C.begin(), C.end(), -1.0f);
        const KernelInfo& k = ctx.sgemm(Trans::N, Trans::N, 1, N, K, 1.0f, A.data(), lda, B.data(), N, 0.0f,
                                        C.data(), N);
        CHECK(C[0] == 0.5f * 0.25f * float(K) && C[N - 1] == C[0], k.name << " at lda " << lda << ": " << C[0]);
        CHECK(!has_blas || (lda == K) == (k.name == "openblas"), k.name << " ran at lda " << lda);
    }
    clear_tuning_table();
}

void accuracy_never_admits_a_weaker_class() {
    CHECK(allows(Accuracy::fp32, Precision::fp32) && allows(Accuracy::fp32, Precision::fp32x3) &&
              !allows(Accuracy::fp32, Precision::tf32),
          "fp32 admits fp32 and fp32x3 only");
    CHECK(allows(Accuracy::strict, Precision::fp32) && !allows(Accuracy::strict, Precision::fp32x3) &&
              !allows(Accuracy::strict, Precision::tf32),
          "strict admits fp32 only");
    CHECK(allows(Accuracy::tf32, Precision::tf32), "tf32 admits tf32");
    CHECK(parse_accuracy("strict") == Accuracy::strict, "parse");
    std::string msg = test::expect_throw<NotFoundError>([] { parse_accuracy("fp16"); }, "unknown precision");
    CHECK(msg.find("fp32") != std::string::npos && msg.find("tf32") != std::string::npos, msg);
    for (const Kernel* k : Registry::global().kernels()) {
        if (!k->info().auto_candidate) continue;
        Problem p = Problem::dense(64, 64, 64);
        if (!k->info().accepts(p) || !Registry::global().available(Registry::global().backend(k->info().backend)))
            continue;
        const Kernel& chosen = select_kernel(k->info().backend, p, Accuracy::strict);
        CHECK(chosen.info().precision == Precision::fp32, chosen.info().name << " under strict");
    }
}

}  // namespace

// The tournament's calls of the spin test's candidates, in order, with their start times.
struct SpinCall {
    bool spinner;
    std::chrono::steady_clock::time_point at;
};
std::vector<SpinCall>& spin_calls() {
    static std::vector<SpinCall> calls;
    return calls;
}
constexpr double kTestSpin = 0.05;  // seconds the spinner's "library" is said to spin

void spin_spinner(const Problem& p, const float* A, const float* B, float* C) {
    spin_calls().push_back({true, std::chrono::steady_clock::now()});
    product_taking(3e-4, p, A, B, C);  // slower: the last call (the winner's) is not its
}
void spin_other(const Problem& p, const float* A, const float* B, float* C) {
    spin_calls().push_back({false, std::chrono::steady_clock::now()});
    product_taking(1e-4, p, A, B, C);
}

class SpinBackend : public TieBackend {
public:
    std::string name() const override { return "spin"; }
};

// A candidate whose library's workers spin after each call (OpenBLAS) runs all its rounds
// before any other candidate's, and the others start only once its spin has passed: no
// candidate is timed against threads still busy on the cores.
void spinning_candidates_are_timed_apart() {
    Registry::global().add_backend(std::make_unique<SpinBackend>());
    KernelInfo info;
    info.name = "spin_baseline";
    info.backend = "spin";
    info.baseline = true;
    info.auto_candidate = true;
    info.spins_after = [](const Problem&) { return kTestSpin; };
    info.source = "tests/cpp/test_selection.cpp";
    info.description = "test candidate whose threads spin after a call";
    Registry::global().add_kernel(std::make_unique<HostKernel>(std::move(info), spin_spinner));
    add_test_kernel("spin_other_a", "spin", 1, false, spin_other, "test candidate");
    add_test_kernel("spin_other_b", "spin", 2, false, spin_other, "test candidate");
    clear_tuning_table();
    spin_calls().clear();
    auto_call("spin", test::Case{8, 8, 8}, 9);
    const auto& calls = spin_calls();
    size_t spinner_calls = 0;
    while (spinner_calls < calls.size() && calls[spinner_calls].spinner) ++spinner_calls;
    CHECK(spinner_calls >= 3, "the spinning candidate ran " << spinner_calls << " times before the others");
    CHECK(spinner_calls < calls.size(), "the other candidates never ran");
    bool apart = true;
    for (size_t i = spinner_calls; i < calls.size(); ++i) apart = apart && !calls[i].spinner;
    CHECK(apart, "the spinning candidate ran again among the others");
    if (spinner_calls > 0 && spinner_calls < calls.size()) {
        const double gap =
            std::chrono::duration<double>(calls[spinner_calls].at - calls[spinner_calls - 1].at).count();
        CHECK(gap >= kTestSpin, "the others started " << gap << " s after the spinning candidate's last call");
    }
    clear_tuning_table();
}

// The second opinion's backend: a vendor baseline at a fixed time, and the preferred
// candidate (the highest rung), whose time each test sets to stand for a disturbance.
struct OpinionTimes {
    double baseline_s = 4e-4, preferred_s = 2e-4;
    std::atomic<int64_t> runs{0};  // of either kernel: one per plain call, many per tournament
    bool fail = false;             // both kernels throw, as an interrupted or lost device would
};
OpinionTimes& opinion_times() {
    static OpinionTimes t;
    return t;
}
void set_opinion_times(double baseline_s, double preferred_s) {
    opinion_times().baseline_s = baseline_s, opinion_times().preferred_s = preferred_s;
}
void opinion_baseline(const Problem& p, const float* A, const float* B, float* C) {
    if (opinion_times().fail) throw KernelError("opinion test: failing on purpose");
    ++opinion_times().runs;
    product_taking(opinion_times().baseline_s, p, A, B, C);
}
void opinion_preferred(const Problem& p, const float* A, const float* B, float* C) {
    if (opinion_times().fail) throw KernelError("opinion test: failing on purpose");
    ++opinion_times().runs;
    product_taking(opinion_times().preferred_s, p, A, B, C);
}

class OpinionBackend : public TieBackend {
public:
    std::string name() const override { return "opinion"; }
};

constexpr const char* kOpinionClass = "opinion|fp32|nn|beta0|8x8x8";

// The calls left before the class's second opinion; 0 when its choice is confirmed.
// (opinion_call below runs the 8 x 8 x 8 class.)
int64_t calls_left(const char* shape_class) {
    const auto pending = provisional_choices();
    const auto it = pending.find(shape_class);
    return it == pending.end() ? 0 : it->second.calls_left;
}

// A call of the opinion backend's 8 x 8 x 8 class: the kernel that ran.
std::string opinion_call() { return auto_call("opinion", test::Case{8, 8, 8}, 11); }

// Calls the class until its choice is confirmed, checking that the due call is exactly
// the one the count promised and that it ran a second tournament; returns that
// tournament's record.
TuningRecord call_until_confirmed() {
    const int64_t left = calls_left(kOpinionClass);
    CHECK(left >= 1, "the choice is provisional");
    const int64_t runs = opinion_times().runs;
    for (int64_t i = 1; i < left; ++i) opinion_call();
    CHECK(calls_left(kOpinionClass) == 1, "one call left, not " << calls_left(kOpinionClass));
    CHECK(opinion_times().runs - runs == left - 1, "a tournament ran before the second opinion was due");
    opinion_call();
    CHECK(calls_left(kOpinionClass) == 0, "the second opinion confirmed the class");
    CHECK(opinion_times().runs - runs > left, "the due call ran a tournament");
    const std::vector<TuningRecord> records = tuning_records();
    CHECK(!records.empty() && records.back().second_opinion && records.back().shape_class == kOpinionClass,
          "the due call's tournament is recorded as the class's second opinion");
    return records.empty() ? TuningRecord{} : records.back();
}

// A disturbance that lasts the whole first tournament (the preferred candidate running at
// a quarter of its speed) gives the class to the baseline for a while; the second opinion,
// undisturbed, gives it back, and then nothing is timed again.
void a_second_opinion_corrects_a_disturbed_choice() {
    clear_tuning_table();
    set_opinion_times(4e-4, 8e-4);  // the preferred one disturbed
    CHECK(opinion_call() == "opinion_baseline", "the disturbed tournament's winner");
    const std::vector<TuningRecord> first = tuning_records();
    CHECK(!first.empty() && !first.back().second_opinion && first.back().shape_class == kOpinionClass,
          "the first tournament is recorded as such");
    opinion_times().preferred_s = 2e-4;  // the disturbance is over
    CHECK(call_until_confirmed().winner == "opinion/opinion_preferred", "the second opinion's winner");
    const int64_t runs = opinion_times().runs;
    for (int i = 0; i < 20; ++i) CHECK(opinion_call() == "opinion_preferred", "the confirmed choice");
    CHECK(opinion_times().runs - runs == 20, "a confirmed class was timed again");
    clear_tuning_table();
}

// The other way round: a sound first choice survives a disturbed second tournament,
// since each candidate counts at the better of its two rates.
void a_disturbed_second_opinion_keeps_a_sound_choice() {
    clear_tuning_table();
    set_opinion_times(4e-4, 2e-4);
    CHECK(opinion_call() == "opinion_preferred", "the first tournament's winner");
    opinion_times().preferred_s = 8e-4;  // the preferred candidate disturbed in the second
    const TuningRecord second = call_until_confirmed();
    CHECK(second.winner == "opinion/opinion_preferred",
          "the disturbed second tournament took the class from the better kernel");
    double preferred_s = 0.0, baseline_s = 0.0;
    for (const auto& [name, s] : second.seconds)
        (name == "opinion/opinion_preferred" ? preferred_s : baseline_s) = s;
    CHECK(preferred_s > baseline_s, "the record keeps the second tournament's own times: " << preferred_s << " s, "
                                                                                           << baseline_s << " s");
    clear_tuning_table();
}

// A provisional choice saved by one process keeps counting in the next; unusable records
// are discarded with their class.
void provisional_choices_load_and_count_on() {
    clear_tuning_table();
    set_opinion_times(4e-4, 2e-4);
    const std::map<std::string, std::string> entries = {{kOpinionClass, "opinion_baseline"},
                                                        {"opinion|fp32|nn|beta0|16x16x16", "opinion_baseline"},
                                                        {"opinion|fp32|nn|beta0|32x32x32", "opinion_baseline"},
                                                        {"opinion|fp32|nn|beta0|64x64x64", "opinion_baseline"}};
    const std::map<std::string, ProvisionalChoice> provisional = {
        {kOpinionClass, {3, {{"opinion/opinion_baseline", 2e6}, {"opinion/opinion_preferred", 1e6}}}},
        {"opinion|fp32|nn|beta0|16x16x16", {0, {}}},                                     // no calls left
        {"opinion|fp32|nn|beta0|32x32x32", {5, {{"opinion/opinion_preferred", NAN}}}},  // not a rate
        {"opinion|fp32|nn|beta0|128x8x8", {5, {}}},                                      // no entry
    };
    const int discarded = load_tuning_table(entries, provisional);
    CHECK(discarded == 3, "discarded " << discarded);
    const auto kept = tuning_table();
    CHECK(kept.size() == 2 && kept.count(kOpinionClass) && kept.count("opinion|fp32|nn|beta0|64x64x64"),
          "kept " << kept.size());
    CHECK(calls_left(kOpinionClass) == 3 && calls_left("opinion|fp32|nn|beta0|64x64x64") == 0,
          "the loaded counts: " << calls_left(kOpinionClass));
    CHECK(opinion_call() == "opinion_baseline", "a loaded provisional choice runs");
    CHECK(calls_left(kOpinionClass) == 2, "its count goes on");
    call_until_confirmed();
    CHECK(opinion_call() == "opinion_preferred", "the second opinion replaced the loaded choice");
    clear_tuning_table();
}

// A second opinion that does not finish (the call is interrupted, or every candidate
// fails) leaves the choice provisional and due again after as many calls.
void an_unfinished_second_opinion_comes_due_again() {
    clear_tuning_table();
    set_opinion_times(4e-4, 2e-4);
    const std::map<std::string, ProvisionalChoice> provisional = {
        {kOpinionClass, {2, {{"opinion/opinion_baseline", 1e7}, {"opinion/opinion_preferred", 1e7}}}}};
    CHECK(load_tuning_table({{kOpinionClass, "opinion_baseline"}}, provisional) == 0, "the entry loads");
    CHECK(opinion_call() == "opinion_baseline", "the loaded choice runs");
    opinion_times().fail = true;
    test::expect_throw<KernelError>([] { opinion_call(); }, "the due call's tournament, every candidate failing");
    opinion_times().fail = false;
    CHECK(calls_left(kOpinionClass) == 2, "re-armed: " << calls_left(kOpinionClass) << " calls left");
    CHECK(call_until_confirmed().winner == "opinion/opinion_preferred", "the second opinion, on time");
    clear_tuning_table();
}

// Threads calling a class whose second opinion comes due among them: exactly one runs
// it, the others keep calling the kept kernel meanwhile, and every result is right. (Which
// kernel wins is left open: the threads' own calls disturb that tournament.)
void one_second_opinion_among_threads() {
    clear_tuning_table();
    set_opinion_times(4e-4, 2e-4);
    const char* shape_class = "opinion|fp32|nn|beta0|16x16x16";
    const std::map<std::string, ProvisionalChoice> provisional = {
        {shape_class, {6, {{"opinion/opinion_baseline", 1e7}, {"opinion/opinion_preferred", 1e7}}}}};
    CHECK(load_tuning_table({{shape_class, "opinion_baseline"}}, provisional) == 0, "the entry loads");
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([t] {
            for (int i = 0; i < 8; ++i) auto_call("opinion", test::Case{16, 16, 16}, uint64_t(100 + t));
        });
    for (std::thread& t : threads) t.join();
    int tournaments = 0;
    for (const TuningRecord& r : tuning_records()) tournaments += r.shape_class == shape_class;
    CHECK(tournaments == 1, tournaments << " tournaments for the class, not one");
    CHECK(calls_left(shape_class) == 0, "the class is confirmed");
    clear_tuning_table();
}

int main() {
    accuracy_never_admits_a_weaker_class();
    loaded_entries_are_validated();
    auto_never_hands_a_32_bit_blas_a_64_bit_leading_dimension();
    wrong_or_throwing_candidates_never_win();
    baselines_keep_a_tie();
    spinning_candidates_are_timed_apart();
    Registry::global().add_backend(std::make_unique<OpinionBackend>());
    const char* what = "test candidate with a set time";
    add_test_kernel("opinion_baseline", "opinion", 0, true, opinion_baseline, what);
    add_test_kernel("opinion_preferred", "opinion", 2, false, opinion_preferred, what);
    a_second_opinion_corrects_a_disturbed_choice();
    a_disturbed_second_opinion_keeps_a_sound_choice();
    provisional_choices_load_and_count_on();
    an_unfinished_second_opinion_comes_due_again();
    one_second_opinion_among_threads();
    return test::finish("test_selection");
}
