// See direct_call.hpp.
#include "cuda/direct_call.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/threads.hpp"
#include "cuda/common/cuda_check.hpp"

namespace fastgemm {
namespace cuda {

namespace {

constexpr int kSlotsPerRing = 4;
constexpr size_t kMinSlotBytes = size_t(256) << 10;  // one row of K = 65536 floats
constexpr size_t kMaxSlotBytes = size_t(8) << 20;    // 2 rings x 4 x 8 MB = 64 MB pinned at most
// Below this many bytes moved, or with fewer rows than two blocks, one block: the call is
// bound by latency, and every extra block costs launches and events.
constexpr size_t kMinBytesToSplit = size_t(16) << 20;
constexpr int64_t kMinBlockRows = 512;
constexpr int kMaxBlocks = 4;
// Row blocks are multiples of this, so a kernel that accepts M (M % BM == 0 for any
// BM <= 256) accepts every block, and block starts keep op(A) and C 1 KB aligned.
constexpr int64_t kBlockRowQuantum = 256;
// The host copies into and out of pinned slots use the thread pool from this size on.
constexpr size_t kParallelCopyBytes = size_t(1) << 20;

// dst (rows x cols, row stride dst_ld) = src (row stride src_ld), on the host.
void copy_rows(float* dst, int64_t dst_ld, const float* src, int64_t src_ld, int64_t rows, int64_t cols) {
    const size_t row_bytes = size_t(cols) * sizeof(float);
    auto copy = [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + r * dst_ld, src + r * src_ld, row_bytes);
    };
    const size_t bytes = row_bytes * size_t(rows);
    const int tasks = int(std::min<int64_t>({int64_t(get_num_threads()), rows,
                                             int64_t(bytes / (kParallelCopyBytes / 2)) + 1}));
    if (bytes < kParallelCopyBytes || tasks <= 1) {
        copy(0, rows);
        return;
    }
    parallel_for(tasks, [&](int t, int n) { copy(rows * t / n, rows * (t + 1) / n); });
}

// One pinned staging buffer and the event of the last copy engine transfer that used it.
struct Slot {
    float* host = nullptr;
    cudaEvent_t done = nullptr;
    bool recorded = false;  // `done` has been recorded at least once
    // A download into this slot that still has to be copied out to the caller's C.
    bool pending = false;
    float* dst = nullptr;
    int64_t dst_ld = 0, rows = 0, cols = 0;
};

class Pipeline {
public:
    Pipeline() {
        for (cudaStream_t* s : {&up_, &compute_, &down_})
            FASTGEMM_CUDA_CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
    }

    void run(const LadderEntry& entry, const Problem& p, const float* A, const float* B, float* C) {
        try {
            run_blocks(entry, p, A, B, C);
        } catch (...) {
            // Leave nothing in flight that refers to the slots or the device copies.
            for (cudaStream_t s : {up_, compute_, down_}) cudaStreamSynchronize(s);
            for (Slot& s : up_ring_) s.pending = false;
            for (Slot& s : down_ring_) s.pending = false;
            throw;
        }
    }

private:
    struct Block {
        int64_t m0, m1;
    };

    // Row blocks of C for `p`: one, or up to kMaxBlocks of kBlockRowQuantum multiples
    // when the transfers are large, each accepted by the kernel.
    static std::vector<Block> plan_blocks(const LadderEntry& entry, const Problem& p, size_t bytes) {
        std::vector<Block> blocks{{0, p.M}};
        if (bytes < kMinBytesToSplit || p.M < 2 * kMinBlockRows) return blocks;
        const int64_t n = std::min<int64_t>(kMaxBlocks, p.M / kMinBlockRows);
        const int64_t rows = (p.M + n - 1) / n;
        const int64_t step = (rows + kBlockRowQuantum - 1) / kBlockRowQuantum * kBlockRowQuantum;
        KernelInfo info;
        info.constraints = entry.constraints;
        std::vector<Block> split;
        for (int64_t m0 = 0; m0 < p.M; m0 += step) {
            Problem q = p;
            q.M = std::min(step, p.M - m0);
            if (!info.accepts(q)) return blocks;
            split.push_back({m0, m0 + q.M});
        }
        return split;
    }

    void run_blocks(const LadderEntry& entry, const Problem& p, const float* A, const float* B, float* C) {
        const bool read_c = p.beta != 0.0f;
        const int64_t lda = round_up4(p.a_cols()), ldb = round_up4(p.b_cols()), ldc = round_up4(p.N);
        const size_t a_bytes = size_t(p.a_rows()) * p.a_cols() * 4, b_bytes = size_t(p.b_rows()) * p.b_cols() * 4;
        const size_t c_bytes = size_t(p.M) * p.N * 4;
        reserve_slots(a_bytes + b_bytes + (read_c ? 2 : 1) * c_bytes);
        float* dA = device_buffer(0, size_t(p.a_rows()) * lda * 4);
        float* dB = device_buffer(1, size_t(p.b_rows()) * ldb * 4);
        float* dC = device_buffer(2, size_t(p.M) * ldc * 4);
        // Zero the padding columns: no kernel reads them, but they stay defined.
        if (lda != p.a_cols())
            FASTGEMM_CUDA_CHECK(cudaMemset2DAsync(dA + p.a_cols(), size_t(lda) * 4, 0, size_t(lda - p.a_cols()) * 4,
                                                  size_t(p.a_rows()), up_));
        if (ldb != p.b_cols())
            FASTGEMM_CUDA_CHECK(cudaMemset2DAsync(dB + p.b_cols(), size_t(ldb) * 4, 0, size_t(ldb - p.b_cols()) * 4,
                                                  size_t(p.b_rows()), up_));

        const std::vector<Block> blocks = plan_blocks(entry, p, a_bytes + b_bytes + c_bytes);
        while (block_events_.size() < 2 * blocks.size()) {
            cudaEvent_t e = nullptr;
            FASTGEMM_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
            block_events_.push_back(e);
        }
        // Block i's C is queued for download after block i + 1's operands are up, so that
        // the host stages block i + 1 while GEMM i runs, instead of waiting for GEMM i
        // whenever the download ring is full.
        auto download_block = [&](const Block& blk) {
            download(dC + blk.m0 * ldc, ldc, blk.m1 - blk.m0, p.N, C + blk.m0 * p.ldc, p.ldc);
        };
        upload(B, p.ldb, p.b_rows(), p.b_cols(), dB, ldb);
        for (size_t i = 0; i < blocks.size(); ++i) {
            const Block& blk = blocks[i];
            const int64_t rows = blk.m1 - blk.m0;
            // op(A)'s rows [m0, m1): rows of A, or columns of A when it is stored transposed.
            if (p.trans_a)
                upload(A + blk.m0, p.lda, p.K, rows, dA + blk.m0, lda);
            else
                upload(A + blk.m0 * p.lda, p.lda, rows, p.K, dA + blk.m0 * lda, lda);
            if (read_c) upload(C + blk.m0 * p.ldc, p.ldc, rows, p.N, dC + blk.m0 * ldc, ldc);
            cudaEvent_t ready = block_events_[2 * i], done = block_events_[2 * i + 1];
            FASTGEMM_CUDA_CHECK(cudaEventRecord(ready, up_));
            FASTGEMM_CUDA_CHECK(cudaStreamWaitEvent(compute_, ready, 0));
            DeviceOperands d;
            d.problem = p;
            d.problem.M = rows;
            d.problem.lda = lda, d.problem.ldb = ldb, d.problem.ldc = ldc;
            d.A = p.trans_a ? dA + blk.m0 : dA + blk.m0 * lda;
            d.B = dB;
            d.C = dC + blk.m0 * ldc;
            entry.launch(d, compute_, ws_);
            FASTGEMM_CUDA_CHECK(cudaEventRecord(done, compute_));
            FASTGEMM_CUDA_CHECK(cudaStreamWaitEvent(down_, done, 0));
            if (i > 0) download_block(blocks[i - 1]);
        }
        download_block(blocks.back());
        for (int i = 0; i < kSlotsPerRing; ++i) {
            Slot& s = down_ring_[(down_next_ + i) % kSlotsPerRing];
            if (s.pending) finish_download(s);
        }
    }

    // Both rings with slots of at least the size a problem of `bytes` wants (an eighth of
    // it, within [kMinSlotBytes, kMaxSlotBytes]); grown, never shrunk. Called between
    // calls, when nothing is in flight.
    void reserve_slots(size_t bytes) {
        size_t want = kMinSlotBytes;
        while (want < bytes / (2 * kSlotsPerRing) && want < kMaxSlotBytes) want *= 2;
        if (want <= slot_bytes_) return;
        for (std::vector<Slot>* ring : {&up_ring_, &down_ring_}) {
            for (Slot& s : *ring) {
                if (s.host) FASTGEMM_CUDA_CHECK(cudaFreeHost(s.host));
                if (s.done) FASTGEMM_CUDA_CHECK(cudaEventDestroy(s.done));
            }
            ring->assign(kSlotsPerRing, Slot{});
            for (Slot& s : *ring) {
                FASTGEMM_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&s.host), want, cudaHostAllocDefault));
                FASTGEMM_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
            }
        }
        slot_bytes_ = want;
        up_next_ = down_next_ = 0;
    }

    // Device copy `which` (0 A, 1 B, 2 C) of at least `bytes`, kept between calls.
    float* device_buffer(int which, size_t bytes) {
        if (bytes == 0) bytes = 256;
        if (device_bytes_[which] < bytes) {
            if (device_[which]) {
                FASTGEMM_CUDA_CHECK(cudaDeviceSynchronize());
                FASTGEMM_CUDA_CHECK(cudaFree(device_[which]));
                device_[which] = nullptr;
                device_bytes_[which] = 0;
            }
            FASTGEMM_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&device_[which]), bytes));
            device_bytes_[which] = bytes;
        }
        return device_[which];
    }

    // The next slot of a ring, once the transfer that last used it has finished (and, in
    // the download ring, once its data has been copied out).
    Slot& acquire(std::vector<Slot>& ring, int& next) {
        Slot& s = ring[next];
        next = (next + 1) % kSlotsPerRing;
        if (s.pending) finish_download(s);
        if (s.recorded) FASTGEMM_CUDA_CHECK(cudaEventSynchronize(s.done));
        return s;
    }

    void finish_download(Slot& s) {
        FASTGEMM_CUDA_CHECK(cudaEventSynchronize(s.done));
        copy_rows(s.dst, s.dst_ld, s.host, s.cols, s.rows, s.cols);
        s.pending = false;
    }

    // Copies out every download that has already landed, oldest first, without waiting.
    void poll_downloads() {
        for (int i = 0; i < kSlotsPerRing; ++i) {
            Slot& s = down_ring_[(down_next_ + i) % kSlotsPerRing];
            if (!s.pending) continue;
            const cudaError_t q = cudaEventQuery(s.done);
            if (q == cudaErrorNotReady) return;
            FASTGEMM_CUDA_CHECK(q);
            finish_download(s);
        }
    }

    // Pieces of a rows x cols block that fit one slot: whole rows when a row fits,
    // else slot-sized runs of one row.
    template <class F>
    void for_each_piece(int64_t rows, int64_t cols, F&& f) const {
        const int64_t slot_floats = int64_t(slot_bytes_ / sizeof(float));
        const int64_t w = std::min(cols, slot_floats);
        const int64_t h = std::max<int64_t>(1, slot_floats / w);
        for (int64_t r0 = 0; r0 < rows; r0 += h)
            for (int64_t c0 = 0; c0 < cols; c0 += w) f(r0, c0, std::min(h, rows - r0), std::min(w, cols - c0));
    }

    // Host block -> device block, on the upload stream, through the upload ring.
    void upload(const float* src, int64_t src_ld, int64_t rows, int64_t cols, float* dst, int64_t dst_ld) {
        if (rows == 0 || cols == 0) return;
        for_each_piece(rows, cols, [&](int64_t r0, int64_t c0, int64_t h, int64_t w) {
            Slot& s = acquire(up_ring_, up_next_);
            copy_rows(s.host, w, src + r0 * src_ld + c0, src_ld, h, w);
            FASTGEMM_CUDA_CHECK(cudaMemcpy2DAsync(dst + r0 * dst_ld + c0, size_t(dst_ld) * 4, s.host, size_t(w) * 4,
                                                  size_t(w) * 4, size_t(h), cudaMemcpyHostToDevice, up_));
            FASTGEMM_CUDA_CHECK(cudaEventRecord(s.done, up_));
            s.recorded = true;
            poll_downloads();
        });
    }

    // Device block -> host block: queued on the download stream (which the caller has
    // made wait for the GEMM) into the download ring; copied out as slots are needed again,
    // as they land (poll_downloads), or at the end of the call.
    void download(const float* src, int64_t src_ld, int64_t rows, int64_t cols, float* dst, int64_t dst_ld) {
        if (rows == 0 || cols == 0) return;
        for_each_piece(rows, cols, [&](int64_t r0, int64_t c0, int64_t h, int64_t w) {
            Slot& s = acquire(down_ring_, down_next_);
            FASTGEMM_CUDA_CHECK(cudaMemcpy2DAsync(s.host, size_t(w) * 4, src + r0 * src_ld + c0, size_t(src_ld) * 4,
                                                  size_t(w) * 4, size_t(h), cudaMemcpyDeviceToHost, down_));
            FASTGEMM_CUDA_CHECK(cudaEventRecord(s.done, down_));
            s.recorded = true;
            s.pending = true;
            s.dst = dst + r0 * dst_ld + c0;
            s.dst_ld = dst_ld, s.rows = h, s.cols = w;
        });
    }

    cudaStream_t up_ = nullptr, compute_ = nullptr, down_ = nullptr;
    std::vector<Slot> up_ring_, down_ring_;
    int up_next_ = 0, down_next_ = 0;
    size_t slot_bytes_ = 0;
    float* device_[3] = {};
    size_t device_bytes_[3] = {};
    std::vector<cudaEvent_t> block_events_;  // ready, done per row block
    Workspace ws_;
};

}  // namespace

void run_host_call(const LadderEntry& entry, const Problem& p, const float* A, const float* B, float* C) {
    // One pipeline per device, kept for the process (never destroyed: no exit-order
    // issues with the CUDA runtime), used by one host thread at a time.
    static std::mutex mu;
    static auto* pipelines = new std::map<int, std::unique_ptr<Pipeline>>();
    int dev = 0;
    FASTGEMM_CUDA_CHECK(cudaGetDevice(&dev));
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<Pipeline>& pipe = (*pipelines)[dev];
    if (!pipe) pipe = std::make_unique<Pipeline>();
    pipe->run(entry, p, A, B, C);
}

}  // namespace cuda
}  // namespace fastgemm
