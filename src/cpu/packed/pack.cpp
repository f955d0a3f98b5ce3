// Packing loops (see pack.hpp). Every packed element (k, w) of a panel comes from
// src[k * stride_k + w * stride_w]; which stride is 1 depends on the transposes:
//   op(A) rows:  A plain    -> stride_k = 1,   stride_w = lda  (gather across rows)
//                A trans    -> stride_k = lda, stride_w = 1    (copy runs of W)
//   op(B) cols:  B plain    -> stride_k = ldb, stride_w = 1    (copy runs of W)
//                B trans    -> stride_k = 1,   stride_w = ldb  (gather across rows)
// Panel widths are template parameters for the widths the micro-kernels use, so the
// inner copies have fixed trip counts the compiler can unroll and vectorise.
#include "cpu/packed/pack.hpp"

#include <algorithm>
#include <cstring>

namespace fastgemm {
namespace {

// dst[k * W + w] = src[w * stride_w + k] for w < valid, 0 beyond. Each source row is
// read in chunks of 16 consecutive k so every row streams through whole cache lines.
template <int W>
void pack_gather(const float* src, int64_t stride_w, int64_t kc, int valid, float* dst) {
    constexpr int64_t chunk = 16;
    int64_t k0 = 0;
    if (valid == W) {
        for (; k0 + chunk <= kc; k0 += chunk)
            for (int w = 0; w < W; ++w) {
                const float* s = src + w * stride_w + k0;
                for (int64_t k = 0; k < chunk; ++k) dst[(k0 + k) * W + w] = s[k];
            }
    }
    for (; k0 < kc; k0 += chunk) {
        const int64_t n = std::min(chunk, kc - k0);
        for (int w = 0; w < W; ++w) {
            const float* s = src + w * stride_w + k0;
            for (int64_t k = 0; k < n; ++k) dst[(k0 + k) * W + w] = w < valid ? s[k] : 0.0f;
        }
    }
}

// Copy runs (stride_w == 1): walk the source row by row (k outer) across all panels,
// so each source row is read front to back in one sequential stream; going panel by
// panel instead would read W floats every stride_k floats, one page per k row.
template <int W>
void pack_runs_all(const float* src, int64_t stride_k, int64_t width, int64_t kc, float* dst) {
    const int64_t full = width / W;
    const int tail = int(width - full * W);
    for (int64_t k = 0; k < kc; ++k) {
        const float* s = src + k * stride_k;
        float* d = dst + k * W;
        for (int64_t p = 0; p < full; ++p) {
            for (int w = 0; w < W; ++w) d[w] = s[w];
            s += W;
            d += W * kc;
        }
        if (tail)
            for (int w = 0; w < W; ++w) d[w] = w < tail ? s[w] : 0.0f;
    }
}

template <int W>
void pack_panels_w(const float* src, int64_t stride_k, int64_t stride_w, int64_t width,
                   int64_t kc, float* dst) {
    if (stride_w == 1) return pack_runs_all<W>(src, stride_k, width, kc, dst);
    for (int64_t w0 = 0; w0 < width; w0 += W) {
        const int valid = int(std::min<int64_t>(W, width - w0));
        pack_gather<W>(src + w0 * stride_w, stride_w, kc, valid, dst);
        dst += W * kc;
    }
}

// Any other width (no micro-kernel uses one today; kept so a new kernel shape works
// before it gets a specialisation).
void pack_panels_any(const float* src, int64_t stride_k, int64_t stride_w, int64_t width,
                     int64_t kc, int W, float* dst) {
    for (int64_t w0 = 0; w0 < width; w0 += W) {
        const int valid = int(std::min<int64_t>(W, width - w0));
        for (int64_t k = 0; k < kc; ++k)
            for (int w = 0; w < W; ++w)
                dst[k * W + w] = w < valid ? src[k * stride_k + (w0 + w) * stride_w] : 0.0f;
        dst += W * kc;
    }
}

void pack_panels(const float* src, int64_t stride_k, int64_t stride_w, int64_t width, int64_t kc,
                 int W, float* dst) {
    switch (W) {
        case 4: return pack_panels_w<4>(src, stride_k, stride_w, width, kc, dst);
        case 6: return pack_panels_w<6>(src, stride_k, stride_w, width, kc, dst);
        case 8: return pack_panels_w<8>(src, stride_k, stride_w, width, kc, dst);
        case 12: return pack_panels_w<12>(src, stride_k, stride_w, width, kc, dst);
        case 14: return pack_panels_w<14>(src, stride_k, stride_w, width, kc, dst);
        case 16: return pack_panels_w<16>(src, stride_k, stride_w, width, kc, dst);
        case 32: return pack_panels_w<32>(src, stride_k, stride_w, width, kc, dst);
        default: return pack_panels_any(src, stride_k, stride_w, width, kc, W, dst);
    }
}

}  // namespace

void pack_a(const Problem& p, const float* A, int64_t i0, int64_t m, int64_t p0, int64_t kc,
            int mr, float* dst) {
    if (p.trans_a)  // stored K x M: op(A)(i, k) = A[k * lda + i]
        pack_panels(A + p0 * p.lda + i0, p.lda, 1, m, kc, mr, dst);
    else  // stored M x K: op(A)(i, k) = A[i * lda + k]
        pack_panels(A + i0 * p.lda + p0, 1, p.lda, m, kc, mr, dst);
}

void pack_b(const Problem& p, const float* B, int64_t p0, int64_t kc, int64_t j0, int64_t n,
            int nr, float* dst) {
    if (p.trans_b)  // stored N x K: op(B)(k, j) = B[j * ldb + k]
        pack_panels(B + j0 * p.ldb + p0, 1, p.ldb, n, kc, nr, dst);
    else  // stored K x N: op(B)(k, j) = B[k * ldb + j]
        pack_panels(B + p0 * p.ldb + j0, p.ldb, 1, n, kc, nr, dst);
}

}  // namespace fastgemm
