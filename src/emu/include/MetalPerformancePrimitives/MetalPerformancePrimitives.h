// metal-emu shim of Apple's MetalPerformancePrimitives: mpp::tensor_ops::matmul2d.
//
// run() is distributed over the threads of the execution scope: scope thread t computes
// output elements t, t + T, t + 2T, ... of the m x n tile (row-major), each as a sum in
// increasing k, reading its inputs through the tensors' edge model (metal_tensor). So no
// thread waits for another inside run(); callers must still call run() from every thread of
// the scope, which the emulator checks through the scope size.
//
// Operand types as Apple's MPPTensorOpsMatMul2d.h lists them: int8_t or uint8_t operands
// (the Neural Accelerators' integer path) with an int32_t, float or half destination, the
// products summed exactly in 32-bit integers (wrapping like the hardware's int32
// accumulators); half operands with a half or float destination; and float operands (which
// fastgemm's FP32 rungs use; computed in FP32 here). Other combinations fail to compile.
#pragma once
#include <metal_tensor>

namespace mpp {
namespace tensor_ops {

// Apple declares the dynamic-length marker here; it is the same entity as metal_tensor's, so
// `using namespace metal; using namespace mpp::tensor_ops;` leaves it unambiguous.
template <class T>
struct dynamic_length {
    static constexpr T value = metal::dynamic_length_v<T>;
};
using metal::dynamic_length_v;

struct matmul2d_descriptor {
    enum class mode { multiply, multiply_accumulate };
    int m = 0, n = 0, k = 0;
    bool transpose_left = false, transpose_right = false, relaxed_precision = false;
    mode matmul_mode = mode::multiply;
    constexpr matmul2d_descriptor(int m_, int n_, int k_ = metal::dynamic_length_v<int>,
                                  bool tl = false, bool tr = false, bool relaxed = false,
                                  mode md = mode::multiply)
        : m(m_), n(n_), k(k_), transpose_left(tl), transpose_right(tr),
          relaxed_precision(relaxed), matmul_mode(md) {}
};

namespace detail {
template <class Scope>
struct scope_layout {
    static constexpr int scope_threads =
        Scope::simdgroups == 0 ? 1 : int(Scope::simdgroups * fgemu::kSimdWidth);
    static int thread_in_scope() {
        auto& t = fgemu::current();
        if (Scope::simdgroups == 0) return 0;
        if (Scope::simdgroups == 1) return int(t.lane);
        return int(t.index);
    }
    static void check() {
        if (Scope::simdgroups > 1) {
            const uint32_t have = fgemu::threads_in_group();
            if (have != uint32_t(scope_threads))
                fgemu::fail("matmul2d with execution_simdgroups<" +
                            std::to_string(Scope::simdgroups) + "> needs exactly " +
                            std::to_string(scope_threads) + " threads per threadgroup, got " +
                            std::to_string(have) + " (undefined behaviour on the GPU)");
        }
    }
};
// MSL's char is its int8_t (a signed 8-bit integer); in host C++ they are distinct
// types, so both spellings count (the emulator compiles with -fsigned-char to match).
template <class T>
inline constexpr bool is_int8_v = std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> ||
                                  std::is_same_v<T, char> || std::is_same_v<T, unsigned char>;
template <class L, class R, class D>
inline constexpr bool supported_types_v =
    (is_int8_v<L> && is_int8_v<R> &&
     (std::is_same_v<D, int32_t> || std::is_same_v<D, float> || std::is_same_v<D, half>)) ||
    (std::is_same_v<L, half> && std::is_same_v<R, half> &&
     (std::is_same_v<D, float> || std::is_same_v<D, half>)) ||
    (std::is_same_v<L, bfloat> && std::is_same_v<R, bfloat> &&
     (std::is_same_v<D, float> || std::is_same_v<D, bfloat>)) ||
    (std::is_same_v<L, float> && std::is_same_v<R, float> && std::is_same_v<D, float>);
template <class T>
struct elem { using type = std::remove_cv_t<typename T::element_type>; };
template <class E, class X, class L>
struct elem<metal::cooperative_tensor<E, X, L>> { using type = E; };

template <class T>
struct is_coop : std::false_type {};
template <class E, class X, class L>
struct is_coop<metal::cooperative_tensor<E, X, L>> : std::true_type {};
}  // namespace detail

template <matmul2d_descriptor Desc, class Scope, class... Args>
class matmul2d {
public:
    static constexpr matmul2d_descriptor descriptor = Desc;
    using scope = Scope;
    using layout = detail::scope_layout<Scope>;

    template <class L, class R, class Elem, class Coord = int>
    auto get_destination_cooperative_tensor() const {
        return metal::cooperative_tensor<Elem, metal::extents<int, size_t(Desc.n), size_t(Desc.m)>,
                                         layout>();
    }

    template <class L, class R, class D>
    void run(L& left, R& right, D& dest) const {
        layout::check();
        constexpr int M = Desc.m, N = Desc.n;
        const int K = Desc.k == metal::dynamic_length_v<int> ||
                              Desc.k == int(static_cast<int>(metal::dynamic_extent))
                          ? int(Desc.transpose_left ? left.get_extent(1) : left.get_extent(0))
                          : Desc.k;
        using LE = typename detail::elem<L>::type;
        using RE = typename detail::elem<R>::type;
        using DE = typename detail::elem<D>::type;
        static_assert(detail::supported_types_v<LE, RE, DE>,
                      "matmul2d: operand types not among those MetalPerformancePrimitives "
                      "supports (int8/uint8 x int8/uint8 -> int32/float/half, half x half -> "
                      "float/half, float x float -> float)");
        constexpr bool integer = detail::is_int8_v<LE>;
        using Acc = std::conditional_t<integer, int32_t, float>;
        const int T = layout::scope_threads, t = layout::thread_in_scope();
        const bool acc = Desc.matmul_mode == matmul2d_descriptor::mode::multiply_accumulate;
        for (int e = t, slot = 0; e < M * N; e += T, ++slot) {
            const int r = e / N, c = e % N;
            if constexpr (!detail::is_coop<D>::value) {
                bool ok;
                int coord[2] = {c, r};
                typename D::index_type ci[2] = {typename D::index_type(c), typename D::index_type(r)};
                (void)coord;
                if (!dest.at(ci, ok)) continue;  // outside C: dropped
            }
            Acc s = 0;
            for (int k = 0; k < K; ++k) {
                const Acc a = Acc(Desc.transpose_left ? left.get(r, k) : left.get(k, r));
                const Acc b = Acc(Desc.transpose_right ? right.get(k, c) : right.get(c, k));
                if constexpr (integer)  // 32-bit wrap-around, without signed-overflow UB
                    s = Acc(uint32_t(s) + uint32_t(a * b));
                else
                    s += a * b;
            }
            auto combine = [&](DE old) {
                if constexpr (integer && std::is_same_v<DE, int32_t>)
                    return acc ? DE(uint32_t(old) + uint32_t(s)) : DE(s);
                else
                    return acc ? DE(float(old) + float(s)) : DE(float(s));
            };
            if constexpr (detail::is_coop<D>::value) {
                dest.v[slot] = combine(dest.v[slot]);
            } else {
                dest.put(c, r, combine(dest.get(c, r)));
            }
        }
    }
};

}  // namespace tensor_ops
}  // namespace mpp
