#include "kernel_info.hpp"

#include <sstream>

#include "errors.hpp"

namespace fastgemm {

const char* to_string(Precision p) {
    switch (p) {
        case Precision::fp32: return "fp32";
        case Precision::tf32: return "tf32";
        case Precision::fp32x3: return "fp32x3";
        case Precision::fp32_ozaki: return "fp32_ozaki";
    }
    return "?";
}

Precision parse_precision(const std::string& name) {
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp32x3, Precision::fp32_ozaki})
        if (name == to_string(p)) return p;
    throw NotFoundError("unknown precision class '" + name + "'; classes: fp32, tf32, fp32x3, fp32_ozaki");
}

static int64_t dim_of(const Problem& p, char dim) {
    switch (dim) {
        case 'M': return p.M;
        case 'N': return p.N;
        case 'K': return p.K;
    }
    return 0;
}

bool Constraint::accepts(const Problem& p) const {
    switch (kind) {
        case Kind::multiple_of: return dim_of(p, dim) % value == 0;
        case Kind::at_least: return dim_of(p, dim) >= value;
        case Kind::at_most: return dim_of(p, dim) <= value;
        case Kind::square: return p.M == p.N && p.N == p.K;
        case Kind::no_trans_a: return !p.trans_a;
        case Kind::no_trans_b: return !p.trans_b;
        case Kind::plain_scalars: return p.alpha == 1.0f && p.beta == 0.0f;
        case Kind::trans_b: return p.trans_b;
        case Kind::vector: return p.M == 1 || p.N == 1;
        case Kind::few_rows_or_columns: return p.M <= value || p.N <= value;
        case Kind::leading_at_most: return p.lda <= value && p.ldb <= value && p.ldc <= value;
    }
    return false;
}

std::string Constraint::describe() const {
    std::ostringstream os;
    switch (kind) {
        case Kind::multiple_of: os << dim << " % " << value << " == 0"; break;
        case Kind::at_least: os << dim << " >= " << value; break;
        case Kind::at_most: os << dim << " <= " << value; break;
        case Kind::square: os << "M == N == K"; break;
        case Kind::no_trans_a: os << "trans_a == False"; break;
        case Kind::no_trans_b: os << "trans_b == False"; break;
        case Kind::plain_scalars: os << "alpha == 1 and beta == 0"; break;
        case Kind::trans_b: os << "trans_b == True"; break;
        case Kind::vector: os << "M == 1 or N == 1"; break;
        case Kind::few_rows_or_columns: os << "M <= " << value << " or N <= " << value; break;
        case Kind::leading_at_most: os << "32-bit leading dimensions (lda, ldb, ldc <= " << value << ")"; break;
    }
    return os.str();
}

std::optional<Constraint> KernelInfo::violated(const Problem& p) const {
    for (const auto& c : constraints) {
        if (!c.accepts(p)) return c;
    }
    return std::nullopt;
}

void KernelInfo::check(const Problem& p) const {
    if (auto c = violated(p)) {
        throw ConstraintError("kernel '" + name + "' (" + backend + ") requires " + c->describe() +
                              ", but the problem is " + p.describe());
    }
}

int64_t KernelInfo::param(const std::string& key, int64_t fallback) const {
    for (const auto& kv : params) {
        if (kv.first == key) return kv.second;
    }
    return fallback;
}

}  // namespace fastgemm
