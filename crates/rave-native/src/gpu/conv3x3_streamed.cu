// RAVE native engine (compiled after wgmma_common.cuh): 3x3 convolution (stride 1, zero
// padding 1) over any number of input channels, its weights streamed through shared memory
// with the input, for RRDBNet's dense blocks (64 to 192 channels in, 32 or 64 out) and its
// upsampling convolutions. FP16 operands, FP32 accumulation, on wgmma m64n128k16.
//
// The product per tile is accumulator-stationary: each warpgroup keeps two accumulators
// (64 rows x 128 pixels) for the whole reduction, and the block walks the input channels
// 16 at a time (a "k-step"), staging for each k-step the tile's input rows and that
// k-step's weights into one of STAGES buffers with cp.async, STAGES - 1 k-steps ahead of
// the tensor cores. The walk runs on across the block's tiles, so the next tile's first
// k-steps load while the current tile's epilogue runs.
//
// Two forms, by output channels:
//   STACK 0 (up to 64 out): M = 64 output channels; an accumulator is one output row; the
//     nine taps are start-address offsets into the staged input (as in conv3x3_wgmma.cu).
//   STACK 1 (up to 32 out): M = 2 output rows x 32 output channels; an accumulator covers
//     two output rows, whose 3x3 windows together span 4 input rows: 12 taps (4 rows x 3
//     columns) with the weights of row dy placed at tap rows dy .. dy + 2 and zeros
//     elsewhere (the host prepares them). 12/9 of the work of one 32-channel layer instead
//     of the 2x that padding 32 outputs to 64 would cost.
//
// Input: NHWC half, `in_stride` channels a pixel, the layer reading the first 16 * ksteps;
// with `up_shift` 1 the input is the nearest x2 upsampling of a map of (height / 2) x
// (width / 2) (read in place). Weights: [kstep][tap][2 chunks][64 rows][8] half (the host's
// streamed layout); bias and slope: [64] float by output channel. Output: NHWC half with
// `out_stride` channels a pixel, channels out_offset .. out_offset + out_channels - 1 (a
// slice of a dense block's concatenation), each value
//     v = act(conv + bias);  v = res_a + res_a_scale * v;  v = res_b + res_b_scale * v
// (each residual where given, read at the output pixel, channels 0 .. out_channels - 1 of a
// map of its own stride; res_b may be the output itself: each value is read and written by
// one thread). Or, with `planar` set, planar float [out_channels][height][width] (the
// network's end, no residuals).
//
// Grid: persistent (blocks stride over tiles of TILE_ROWS x 128 pixels); block: 256 threads
// = 2 warpgroups; dynamic shared memory STAGES * STAGE_BYTES, then 2 * STAGES mbarriers.
//
// Two ways of staging: cp.async by every thread, each 16 bytes with its own address (any
// source, the nearest x2 upsampled one included), k-steps ordered by block barriers; or
// (the _tma kernels, sources of the output's own size) one thread queueing a k-step as one
// tensor copy of the input box (the tensor map: NHWC, box 16 channels x 130 columns x
// STAGED_ROWS rows, 32-byte swizzled, zeros outside the image) and one bulk copy of the
// weights, each stage's arrival and release signalled on mbarriers ("full": the bytes
// landed; "empty": all 256 threads are done with it), no block barrier in the walk.

#define SK_TW 128                    // output pixels per row of a tile (wgmma N)
#define SK_SW (SK_TW + 2)            // staged columns
#define EPILOGUE_BATCH 8             // column groups of 8 pixels stored per batch

template <int STACK>
struct StreamedShape {
    static constexpr int ROWS_PER_ACC = 1 + STACK;            // output rows per accumulator
    static constexpr int TAP_ROWS = 3 + STACK;                // input rows per accumulator
    static constexpr int TAPS = 3 * TAP_ROWS;
    static constexpr int TILE_ROWS = 4 * ROWS_PER_ACC;        // 2 warpgroups x 2 accumulators
    static constexpr int STAGED_ROWS = TILE_ROWS + 2;
    static constexpr int IN_BYTES = STAGED_ROWS * 2 * SK_SW * 16;
    static constexpr int W_BYTES = TAPS * 2048;
    // Stages start on 1024-byte boundaries (the swizzle atom's alignment, with room over).
    static constexpr int STAGE_BYTES = (IN_BYTES + W_BYTES + 1023) / 1024 * 1024;
    static constexpr int STAGES = STACK ? 3 : 4;
};

// Where a 16-byte chunk at shared address `a` lives under the 32-byte swizzle: the chunk's
// half of its 32-byte row XORed with bit 2 of the row's index within the 256-byte atom.
__device__ __forceinline__ u32 swizzle_32(u32 a) {
    return a ^ (((a >> 7) & 1) << 4);
}

// Matrix descriptor, 32-byte swizzle, K-major (a row is one k-step's 16 halves): 8-row
// groups 256 bytes apart, base offset 0 (the hardware swizzles by address bits, as
// measured for the 128-byte form in conv3x3_wgmma.cu).
__device__ __forceinline__ u64 descriptor_swizzled_32(u32 address) {
    return (u64)((address & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(256 >> 4) << 32)
        | ((u64)3 << 62);
}

__device__ __forceinline__ float from_half(half_bits h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

struct StreamedArgs {
    const half_bits* input;
    int in_stride, up_shift;
    const uint4* weight;
    const float* bias;
    const float* slope;
    int ksteps;
    half_bits* output;
    int out_stride, out_offset, out_channels;
    const half_bits* res_a;
    int res_a_stride;
    float res_a_scale;
    const half_bits* res_b;
    int res_b_stride;
    float res_b_scale;
    float* planar;
    int height, width, act;
};

// Stage k-step `ks` of `tile` into the stage at shared address `stage`: the input rows as
// [row][column][16 channels], 32-byte swizzled (zeros outside the image), so a tap's window
// is a start address one 32-byte row (one pixel) further on; then the k-step's weights
// (no swizzle: their core matrices never shift).
template <int STACK>
__device__ __forceinline__ void stage_kstep(const StreamedArgs& a, u32 stage, int tile,
    int tiles_x, int ks)
{
    typedef StreamedShape<STACK> S;
    const int y0 = (tile / tiles_x) * S::TILE_ROWS;
    const int x0 = (tile % tiles_x) * SK_TW;
    const int src_w = a.width >> a.up_shift;
    for (int i = threadIdx.x; i < S::STAGED_ROWS * SK_SW * 2; i += blockDim.x) {
        const int chunk = i & 1;
        const int px = i >> 1;
        const int row = px / SK_SW;
        const int col = px - row * SK_SW;
        const int sy = y0 - 1 + row;
        const int sx = x0 - 1 + col;
        const bool inside = sy >= 0 && sy < a.height && sx >= 0 && sx < a.width;
        const half_bits* src = a.input;
        if (inside) {
            src = a.input + ((long long)(sy >> a.up_shift) * src_w + (sx >> a.up_shift)) * a.in_stride
                + ks * 16 + chunk * 8;
        }
        copy_16_async(swizzle_32(stage + (px * 2 + chunk) * 16), src, inside ? 16u : 0u);
    }
    const u32 wstage = stage + S::IN_BYTES;
    const uint4* w = a.weight + (long long)ks * (S::W_BYTES / 16);
    for (int i = threadIdx.x; i < S::W_BYTES / 16; i += blockDim.x) {
        copy_16_async(wstage + i * 16, w + i, 16u);
    }
}

// Queue one k-step's taps into accumulator `d`, whose first staged row is `row0`.
template <int STACK>
__device__ __forceinline__ void queue_kstep(float* d, u32 stage, int row0, int first)
{
    typedef StreamedShape<STACK> S;
    const u32 wstage = stage + S::IN_BYTES;
    #pragma unroll
    for (int tap = 0; tap < S::TAPS; ++tap) {
        const int ky = tap / 3, kx = tap % 3;
        const u64 desc_a = descriptor(wstage + tap * 2048, 1024, 128);
        const u64 desc_b = descriptor_swizzled_32(stage + ((row0 + ky) * SK_SW + kx) * 32);
        wgmma_m64n128k16(d, desc_a, desc_b, !(first && tap == 0));
    }
}

// The epilogue of one accumulator: output rows y (and y + 1 with STACK), pixels from x0.
template <int STACK>
__device__ __forceinline__ void store_accumulator(const float* d, const StreamedArgs& a,
    int y, int x0)
{
    const int tid = threadIdx.x;
    const int warp = (tid & 127) >> 5;
    const int lane = tid & 31;
    const int group = lane >> 2;
    const int pair = (lane & 3) * 2;
    const bool even = (group & 1) == 0;
    // Rows m of the fragment: warp * 16 + group and 8 more. With STACK, m = dy * 32 + co.
    const int m_lo = warp * 16 + group;
    const int dy = STACK ? (m_lo >> 5) : 0;
    const int row = y + dy;
    if (row >= a.height) {
        return;
    }
    const int co_lo = STACK ? (m_lo & 31) : m_lo;
    const long long pixel_row = (long long)row * a.width;
    // Planar output (the network's end): straight stores of the values.
    if (a.planar) {
        #pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
            const int co = co_lo + 8 * hi;
            if (co >= a.out_channels) {
                continue;
            }
            const float b = a.bias[co];
            const float s = a.act ? a.slope[co] : 1.0f;
            float* plane = a.planar + (long long)co * a.height * a.width + pixel_row;
            #pragma unroll
            for (int j = 0; j < SK_TW / 8; ++j) {
                const int p0 = x0 + 8 * j + pair;
                const float v0 = d[4 * j + 2 * hi] + b, v1 = d[4 * j + 2 * hi + 1] + b;
                if (p0 < a.width) plane[p0] = v0 < 0.0f ? v0 * s : v0;
                if (p0 + 1 < a.width) plane[p0 + 1] = v1 < 0.0f ? v1 * s : v1;
            }
        }
        return;
    }
    // NHWC: in batches of EPILOGUE_BATCH column groups, all of a batch's residual loads
    // before any of its stores (a residual may be the output itself, so the compiler keeps
    // loads and stores in program order: one memory latency per batch, not per value).
    #pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
        const int co = co_lo + 8 * hi;
        const float b = a.bias[co];
        const float s = a.act ? a.slope[co] : 1.0f;
        const int ch = co & ~1;
        #pragma unroll
        for (int j0 = 0; j0 < SK_TW / 8; j0 += EPILOGUE_BATCH) {
            float c0[EPILOGUE_BATCH], c1[EPILOGUE_BATCH];
            long long at[EPILOGUE_BATCH];
            bool ok[EPILOGUE_BATCH];
            #pragma unroll
            for (int k = 0; k < EPILOGUE_BATCH; ++k) {
                const int j = j0 + k;
                const int p0 = x0 + 8 * j + pair;
                float v0 = d[4 * j + 2 * hi] + b;
                float v1 = d[4 * j + 2 * hi + 1] + b;
                v0 = v0 < 0.0f ? v0 * s : v0;
                v1 = v1 < 0.0f ? v1 * s : v1;
                // Lanes with an even channel keep pixel p0 and take the odd channel's
                // value there; lanes with the odd channel keep pixel p0 + 1 (4-byte stores).
                const float recv = __shfl_xor_sync(0xffffffffu, even ? v1 : v0, 4);
                c0[k] = even ? v0 : recv;
                c1[k] = even ? recv : v1;
                const int px = even ? p0 : p0 + 1;
                ok[k] = px < a.width && ch < a.out_channels;
                at[k] = ok[k] ? pixel_row + px : 0;
            }
            u32 ra[EPILOGUE_BATCH], rb[EPILOGUE_BATCH];
            #pragma unroll
            for (int k = 0; k < EPILOGUE_BATCH; ++k) {
                ra[k] = a.res_a && ok[k]
                    ? *reinterpret_cast<const u32*>(a.res_a + at[k] * a.res_a_stride + ch) : 0u;
                rb[k] = a.res_b && ok[k]
                    ? *reinterpret_cast<const u32*>(a.res_b + at[k] * a.res_b_stride + ch) : 0u;
            }
            #pragma unroll
            for (int k = 0; k < EPILOGUE_BATCH; ++k) {
                if (!ok[k]) {
                    continue;
                }
                float v0 = c0[k], v1 = c1[k];
                if (a.res_a) {
                    v0 = from_half((half_bits)(ra[k] & 0xFFFF)) + a.res_a_scale * v0;
                    v1 = from_half((half_bits)(ra[k] >> 16)) + a.res_a_scale * v1;
                }
                if (a.res_b) {
                    v0 = from_half((half_bits)(rb[k] & 0xFFFF)) + a.res_b_scale * v0;
                    v1 = from_half((half_bits)(rb[k] >> 16)) + a.res_b_scale * v1;
                }
                *reinterpret_cast<u32*>(a.output + at[k] * a.out_stride + a.out_offset + ch) =
                    (u32)to_half(v0) | ((u32)to_half(v1) << 16);
            }
        }
    }
}

template <int STACK>
__device__ __forceinline__ void conv_streamed(const StreamedArgs& a)
{
    typedef StreamedShape<STACK> S;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int wg = threadIdx.x >> 7;
    const u32 base = shared_address(smem);

    const int tiles_x = (a.width + SK_TW - 1) / SK_TW;
    const int tiles = tiles_x * ((a.height + S::TILE_ROWS - 1) / S::TILE_ROWS);
    const int grid = gridDim.x;
    const int mine = blockIdx.x < tiles ? (tiles - blockIdx.x + grid - 1) / grid : 0;
    const int total = mine * a.ksteps;
    #pragma unroll
    for (int j = 0; j < S::STAGES - 1; ++j) {
        if (j < total) {
            stage_kstep<STACK>(a, base + j * S::STAGE_BYTES, blockIdx.x + (j / a.ksteps) * grid,
                tiles_x, j % a.ksteps);
        }
        asm volatile("cp.async.commit_group;");
    }
    float acc0[64], acc1[64];
    #pragma unroll
    for (int i = 0; i < 64; ++i) {
        acc0[i] = 0.0f;
        acc1[i] = 0.0f;
    }
    // k-step j of the walk is k-step j % ksteps of the block's tile j / ksteps. The loops
    // are written so that every wgmma wait is on the path all threads take (a wait under a
    // branch serializes the wgmma: ptxas C7518).
    int j = 0;
    for (int t = 0; t < mine; ++t) {
        for (int ks = 0; ks < a.ksteps; ++ks, ++j) {
            const u32 stage = base + (j % S::STAGES) * S::STAGE_BYTES;
            // k-step j has landed (later ones may still be in flight), for every thread:
            // STAGES - 1 groups before the walk and one per k-step since.
            if (S::STAGES == 3) {
                asm volatile("cp.async.wait_group 1;" ::: "memory");
            } else {
                asm volatile("cp.async.wait_group 2;" ::: "memory");
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads();
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            queue_kstep<STACK>(acc0, stage, (wg * 2) * S::ROWS_PER_ACC, ks == 0);
            queue_kstep<STACK>(acc1, stage, (wg * 2 + 1) * S::ROWS_PER_ACC, ks == 0);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            // k-step j - 1 done in this warpgroup, then in both (the barrier): its stage
            // takes k-step j + STAGES - 1, so loads run STAGES - 1 k-steps ahead.
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            __syncthreads();
            const int next = j + S::STAGES - 1;
            if (next < total) {
                stage_kstep<STACK>(a, base + (next % S::STAGES) * S::STAGE_BYTES,
                    blockIdx.x + (next / a.ksteps) * grid, tiles_x, next % a.ksteps);
            }
            asm volatile("cp.async.commit_group;");
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        const int tile = blockIdx.x + t * grid;
        const int y0 = (tile / tiles_x) * S::TILE_ROWS;
        const int x0 = (tile % tiles_x) * SK_TW;
        store_accumulator<STACK>(acc0, a, y0 + (wg * 2) * S::ROWS_PER_ACC, x0);
        store_accumulator<STACK>(acc1, a, y0 + (wg * 2 + 1) * S::ROWS_PER_ACC, x0);
    }
    asm volatile("cp.async.wait_group 0;");
}


// The tensor map of the source (CUtensorMap, 128 bytes, passed by value as a grid constant).
struct __align__(64) TensorMap {
    u64 v[16];
};

__device__ __forceinline__ void mbarrier_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}

// Until the phase of parity `parity` of the mbarrier at `bar` has completed.
__device__ __forceinline__ void mbarrier_wait(u32 bar, u32 parity) {
    asm volatile(
        "{\n.reg .pred done;\nWAIT:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
        "@!done bra WAIT;\n}\n" :: "r"(bar), "r"(parity) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(u32 bar) {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n"
        :: "r"(bar) : "memory");
}

// Arrive and expect `bytes` more of asynchronous copies before the phase completes.
__device__ __forceinline__ void mbarrier_expect(u32 bar, u32 bytes) {
    asm volatile("{\n.reg .b64 state;\n"
        "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n"
        :: "r"(bar), "r"(bytes) : "memory");
}

// The box of the tensor map at (channel c, column x, row y) into shared `dst`, counted on
// the mbarrier `bar`; coordinates outside the tensor read as zeros.
__device__ __forceinline__ void tensor_copy_3d(u32 dst, const TensorMap* map, int c, int x, int y,
    u32 bar)
{
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];"
        :: "r"(dst), "l"(reinterpret_cast<u64>(map)), "r"(c), "r"(x), "r"(y), "r"(bar)
        : "memory");
}

// `bytes` (a multiple of 16) from global `src` into shared `dst`, counted on `bar`.
__device__ __forceinline__ void bulk_copy(u32 dst, const void* src, u32 bytes, u32 bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
        :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// Queue k-step `ks` of `tile` into the stage at `stage` (one thread): the input box and the
// k-step's weights, both counted on the stage's "full" mbarrier.
template <int STACK>
__device__ __forceinline__ void copy_kstep(const StreamedArgs& a, const TensorMap* map, u32 stage,
    u32 full, int tile, int tiles_x, int ks)
{
    typedef StreamedShape<STACK> S;
    const int y0 = (tile / tiles_x) * S::TILE_ROWS;
    const int x0 = (tile % tiles_x) * SK_TW;
    mbarrier_expect(full, S::IN_BYTES + S::W_BYTES);
    tensor_copy_3d(stage, map, ks * 16, x0 - 1, y0 - 1, full);
    bulk_copy(stage + S::IN_BYTES, a.weight + (long long)ks * (S::W_BYTES / 16), S::W_BYTES, full);
}

// The walk of conv_streamed with the tensor-copy staging. Thread 0 also produces: it keeps
// the copies STAGES - 1 k-steps ahead, queueing k-step n into stage n % STAGES once all
// threads have released that stage's previous k-step (n - STAGES).
template <int STACK>
__device__ __forceinline__ void conv_streamed_tma(const StreamedArgs& a, const TensorMap* map)
{
    typedef StreamedShape<STACK> S;
    extern __shared__ __align__(1024) unsigned char smem[];
    const int wg = threadIdx.x >> 7;
    const u32 base = shared_address(smem);
    const u32 full = base + S::STAGES * S::STAGE_BYTES;   // STAGES mbarriers, 8 bytes each
    const u32 empty = full + S::STAGES * 8;

    const int tiles_x = (a.width + SK_TW - 1) / SK_TW;
    const int tiles = tiles_x * ((a.height + S::TILE_ROWS - 1) / S::TILE_ROWS);
    const int grid = gridDim.x;
    const int mine = blockIdx.x < tiles ? (tiles - blockIdx.x + grid - 1) / grid : 0;
    const int total = mine * a.ksteps;
    const bool producer = threadIdx.x == 0;
    if (producer) {
        for (int s = 0; s < S::STAGES; ++s) {
            mbarrier_init(full + 8 * s, 1);
            mbarrier_init(empty + 8 * s, 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    int queued = 0;   // thread 0: the k-steps whose copies are queued
    // Thread 0: queue k-steps until `limit` (exclusive) or the walk's end.
    auto produce = [&](int limit) {
        for (; queued < total && queued < limit; ++queued) {
            const int s = queued % S::STAGES;
            if (queued >= S::STAGES) {
                mbarrier_wait(empty + 8 * s, ((queued / S::STAGES) - 1) & 1);
            }
            copy_kstep<STACK>(a, map, base + s * S::STAGE_BYTES, full + 8 * s,
                blockIdx.x + (queued / a.ksteps) * grid, tiles_x, queued % a.ksteps);
        }
    };
    if (producer) {
        produce(S::STAGES - 1);
    }
    float acc0[64], acc1[64];
    #pragma unroll
    for (int i = 0; i < 64; ++i) {
        acc0[i] = 0.0f;
        acc1[i] = 0.0f;
    }
    int j = 0;
    for (int t = 0; t < mine; ++t) {
        for (int ks = 0; ks < a.ksteps; ++ks, ++j) {
            const int s = j % S::STAGES;
            mbarrier_wait(full + 8 * s, (j / S::STAGES) & 1);
            asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
            queue_kstep<STACK>(acc0, base + s * S::STAGE_BYTES, (wg * 2) * S::ROWS_PER_ACC, ks == 0);
            queue_kstep<STACK>(acc1, base + s * S::STAGE_BYTES, (wg * 2 + 1) * S::ROWS_PER_ACC,
                ks == 0);
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            // k-step j - 1 is done in this warpgroup: release its stage (unless it ended the
            // previous tile, released before that tile's epilogue).
            asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            if (ks > 0) {
                mbarrier_arrive(empty + 8 * ((j - 1) % S::STAGES));
            }
            if (producer) {
                produce(j + S::STAGES);
            }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        // The tile's last k-step is done: its stage takes a k-step of the next tile while
        // this one's epilogue runs.
        mbarrier_arrive(empty + 8 * ((j - 1) % S::STAGES));
        if (producer) {
            produce(j + S::STAGES);
        }
        const int tile = blockIdx.x + t * grid;
        const int y0 = (tile / tiles_x) * S::TILE_ROWS;
        const int x0 = (tile % tiles_x) * SK_TW;
        store_accumulator<STACK>(acc0, a, y0 + (wg * 2) * S::ROWS_PER_ACC, x0);
        store_accumulator<STACK>(acc1, a, y0 + (wg * 2 + 1) * S::ROWS_PER_ACC, x0);
    }
}

#define STREAMED_KERNEL(NAME, STACK)                                                          \
    extern "C" __global__ void __launch_bounds__(256, 1) NAME(                                \
        const half_bits* input, int in_stride, int up_shift, const uint4* weight,             \
        const float* bias, const float* slope, int ksteps, half_bits* output, int out_stride, \
        int out_offset, int out_channels, const half_bits* res_a, int res_a_stride,          \
        float res_a_scale, const half_bits* res_b, int res_b_stride, float res_b_scale,       \
        float* planar, int height, int width, int act)                                        \
    {                                                                                         \
        const StreamedArgs a = {input, in_stride, up_shift, weight, bias, slope, ksteps,      \
            output, out_stride, out_offset, out_channels, res_a, res_a_stride, res_a_scale,   \
            res_b, res_b_stride, res_b_scale, planar, height, width, act};                    \
        conv_streamed<STACK>(a);                                                              \
    }

#define STREAMED_TMA_KERNEL(NAME, STACK)                                                      \
    extern "C" __global__ void __launch_bounds__(256, 1) NAME(                                \
        const __grid_constant__ TensorMap source_map, const half_bits* input, int in_stride,  \
        int up_shift, const uint4* weight, const float* bias, const float* slope, int ksteps, \
        half_bits* output, int out_stride, int out_offset, int out_channels,                  \
        const half_bits* res_a, int res_a_stride, float res_a_scale, const half_bits* res_b,  \
        int res_b_stride, float res_b_scale, float* planar, int height, int width, int act)   \
    {                                                                                         \
        const StreamedArgs a = {input, in_stride, up_shift, weight, bias, slope, ksteps,      \
            output, out_stride, out_offset, out_channels, res_a, res_a_stride, res_a_scale,   \
            res_b, res_b_stride, res_b_scale, planar, height, width, act};                    \
        conv_streamed_tma<STACK>(a, &source_map);                                             \
    }

// Up to 64 output channels (M = channels), and up to 32 (M = 2 rows x 32 channels); the
// _tma forms take sources of the output's size only (up_shift 0).
STREAMED_KERNEL(conv3x3_streamed_c64, 0)
STREAMED_KERNEL(conv3x3_streamed_c32, 1)
STREAMED_TMA_KERNEL(conv3x3_streamed_tma_c64, 0)
STREAMED_TMA_KERNEL(conv3x3_streamed_tma_c32, 1)
