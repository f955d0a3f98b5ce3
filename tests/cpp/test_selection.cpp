// The selection policy (core/selection.hpp) through the public C++ API: kernel="auto"
// never returns a candidate whose result is wrong or that throws, even when it is the
// fastest; the tuning table refuses every entry the policy would not choose itself; the
// accuracy request never admits a weaker precision class.
#include <cmath>
#include <memory>
#include <vector>

#include "core/host_kernel.hpp"
#include "core/registry.hpp"
#include "core/selection.hpp"
#include "test_support.hpp"

using namespace fastgemm;

namespace {

// Two auto candidates that are faster than anything real: one returns without writing
// C, one throws.
void does_nothing(const Problem&, const float*, const float*, float*) {}
void throws(const Problem&, const float*, const float*, float*) { throw KernelError("device lost"); }

void add_impostor(const char* name, HostGemm fn) {
    KernelInfo info;
    info.name = name;
    info.backend = "cpu";
    info.ladder_step = 99;  // the highest rung: first in line when timing is off
    info.auto_candidate = true;
    info.source = "tests/cpp/test_selection.cpp";
    info.description = "test impostor";
    Registry::global().add_kernel(std::make_unique<HostKernel>(std::move(info), fn));
}

void wrong_or_throwing_candidates_never_win() {
    clear_tuning_table();
    add_impostor("impostor_noop", does_nothing);
    add_impostor("impostor_throw", throws);
    Context ctx("cpu");
    for (int64_t n : {5, 40, 130}) {
        test::Case c{n, n + 3, n + 1};
        test::Operands o(c, 7 + n);
        std::vector<float> C = test::initial_c(c, o);
        const KernelInfo& k = ctx.sgemm(Trans::N, Trans::N, c.M, c.N, c.K, 1.0f, o.A.data(), c.lda(), o.B.data(),
                                        c.ldb(), 0.0f, C.data(), c.ldc());
        CHECK(k.name.rfind("impostor", 0) != 0, "auto chose " << k.name << " at " << n);
        CHECK(test::rel_err(c, o, C) < 1e-5, "auto's result at " << n << ": rel err " << test::rel_err(c, o, C));
        // Later calls of the class recall the same (verified) choice.
        C = test::initial_c(c, o);
        const KernelInfo& again = ctx.sgemm(Trans::N, Trans::N, c.M, c.N, c.K, 1.0f, o.A.data(), c.lda(),
                                            o.B.data(), c.ldb(), 0.0f, C.data(), c.ldc());
        CHECK(again.name == k.name, "the class changed kernel: " << k.name << " then " << again.name);
        CHECK(test::rel_err(c, o, C) < 1e-5, "recalled kernel's result at " << n);
    }
    bool noop = false, thrown = false;
    for (const std::string& r : tuning_rejections()) {
        noop |= r.find("cpu/impostor_noop: result failed") != std::string::npos;
        thrown |= r.find("cpu/impostor_throw: device lost") != std::string::npos;
    }
    CHECK(noop && thrown, "both impostors are on the rejection log");
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
    Context ctx("cpu");
    test::Case c{60, 50, 40};
    test::Operands o(c, 3);
    std::vector<float> C = test::initial_c(c, o);
    const KernelInfo& k = ctx.sgemm(Trans::N, Trans::N, c.M, c.N, c.K, 1.0f, o.A.data(), c.lda(), o.B.data(),
                                    c.ldb(), 0.0f, C.data(), c.ldc());
    CHECK(k.name == "direct", "the loaded choice ran: " << k.name);
    CHECK(test::rel_err(c, o, C) < 1e-5, "loaded choice's result");
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

int main() {
    accuracy_never_admits_a_weaker_class();
    loaded_entries_are_validated();
    wrong_or_throwing_candidates_never_win();
    return test::finish("test_selection");
}
