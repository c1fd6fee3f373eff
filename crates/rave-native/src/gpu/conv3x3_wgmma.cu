// RAVE native engine (compiled after wgmma_common.cuh): 3x3 convolution (stride 1) of up
// to 64 channels in and out, on Hopper's warpgroup tensor-core instructions (wgmma,
// sm_90a), FP16 operands, FP32 accumulation, with the bias and the activation (PReLU with
// one slope per output channel, or none) applied before the one store.
//
// The convolution is a matrix product per output row: D[cout][pixel] = sum over the nine
// taps and 64 input channels of W[cout][tap, cin] * X[tap, cin][pixel], M = 64 output
// channels, N = 128 pixels, K = 9 x 64. Both operands come from shared memory through
// wgmma's matrix descriptors in the layout without swizzle, whose unit is the 8x8 "core
// matrix" of 16-byte rows. Laying the staged input out as [row][channel chunk][column][8
// channels] makes a tap's shifted window (kx = 0, 1, 2) a start address 16 bytes further
// on, so the nine taps read one staged copy of the input with no data movement.
//
// Input: NCH chunks of 8 channels, the first NA from `input` (NHWC, NA * 8 channels a
// pixel), the rest from `input_b` (NHWC, (NCH - NA) * 8 channels): the SRVGGNetCompact
// folded tail reads the last layer's 48 channels and the network's input this way, in place.
// Border: zeros (padding 1), or REMAP: the nearest pixel with its channel taken through the
// folded tail's edge tables (`remap`: 4 x 64 ints, top, bottom, left, right; the column
// table applies first). Weights: [tap 9][chunk NCH][cout 64][8] half, prepared by the host
// (device_conv.rs), zeros past the layer's channels; bias, slope: [64] float.
// Output: NHWC half with `out_channels` channels a pixel (the first out_channels of the 64
// computed), or, for the network's end, depth-to-space by `block` into planar float
// [3][H * block][W * block], plus the nearest-upsampled input where `residual` is set.
//
// Grid: persistent, any number of blocks (they stride over tiles of 2 rows x 128 pixels);
// block: 256 threads = 2 warpgroups, one output row each; dynamic shared memory:
// 9 * NCH * 1024 + 2 * max(4 * NCH * 130 * 16, 2 * 128 * 72 * 2) bytes. The block keeps
// the layer's weights in shared memory and stages the next tile's input (4 rows x 130 columns, zeros outside the image) with cp.async while it
// computes the current one.

#define WG_TW 128                    // output pixels per row of a tile (wgmma N)
#define WG_SW (WG_TW + 2)            // staged columns
#define WG_TH 2                      // output rows per tile (one per warpgroup)
#define WG_SR (WG_TH + 2)            // staged rows
#define WG_OUT_STRIDE 72             // halves per pixel in the epilogue's transpose buffer

// Matrix descriptor, 128-byte swizzle, K-major: 8-row groups 1024 bytes apart; `base` is
// the matrix base offset field (bits 49-51).
__device__ __forceinline__ u64 descriptor_swizzled(u32 address, u32 base) {
    return (u64)((address & 0x3FFFF) >> 4) | ((u64)1 << 16) | ((u64)(1024 >> 4) << 32)
        | ((u64)(base & 7) << 49) | ((u64)1 << 62);
}

// Where a 16-byte chunk at shared address `a` lives under the 128-byte swizzle: its chunk
// index within the 128-byte line XORed with the line's index within the 1024-byte atom.
__device__ __forceinline__ u32 swizzle_128(u32 a) {
    return a ^ (((a >> 7) & 7) << 4);
}

#define BORDER_ZERO 0
#define BORDER_REMAP 1

// Stage `tile`'s input into `stage` (shared address) with threads first, first + step, ...:
// [row][chunk][column][8] without swizzle, or (SWZ) [row][column][64 channels], 128-byte
// swizzled (64 channels only). Outside the image zeros, or the remapped nearest pixel.
template <int NCH, int NA, int BORDER, int SWZ>
__device__ __forceinline__ void stage_pixels(
    const half_bits* __restrict__ input, const half_bits* __restrict__ input_b,
    const int* __restrict__ remap, u32 stage, int tile, int tiles_x, int height, int width,
    int first, int step)
{
    const int y0 = (tile / tiles_x) * WG_TH;
    const int x0 = (tile % tiles_x) * WG_TW;
    for (int i = first; i < WG_SR * WG_SW * NCH; i += step) {
        const int chunk = i % NCH;
        const int px = i / NCH;
        const int row = px / WG_SW;
        const int col = px - row * WG_SW;
        const int sy = y0 - 1 + row;
        const int sx = x0 - 1 + col;
        const u32 dst = SWZ ? swizzle_128(stage + (px * 8 + chunk) * 16)
                            : stage + ((row * NCH + chunk) * WG_SW + col) * 16;
        const bool inside = sy >= 0 && sy < height && sx >= 0 && sx < width;
        if (BORDER == BORDER_REMAP && !inside && sx >= -1 && sx <= width && sy >= -1 && sy <= height) {
            const int cy = sy < 0 ? 0 : (sy >= height ? height - 1 : sy);
            const int cx = sx < 0 ? 0 : (sx >= width ? width - 1 : sx);
            const int* col_map = sx < 0 ? remap + 128 : (sx >= width ? remap + 192 : nullptr);
            const int* row_map = sy < 0 ? remap : (sy >= height ? remap + 64 : nullptr);
            u32 packed[4];
            #pragma unroll
            for (int e = 0; e < 8; e += 2) {
                half_bits v[2];
                #pragma unroll
                for (int k = 0; k < 2; ++k) {
                    int c = chunk * 8 + e + k;
                    if (col_map) c = col_map[c];
                    if (row_map) c = row_map[c];
                    v[k] = c < NA * 8
                        ? input[((long long)cy * width + cx) * (NA * 8) + c]
                        : input_b[((long long)cy * width + cx) * ((NCH - NA) * 8) + c - NA * 8];
                }
                packed[e / 2] = (u32)v[0] | ((u32)v[1] << 16);
            }
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};"
                :: "r"(dst), "r"(packed[0]), "r"(packed[1]), "r"(packed[2]), "r"(packed[3]));
            continue;
        }
        const half_bits* src = input;
        if (inside) {
            src = chunk < NA
                ? input + ((long long)sy * width + sx) * (NA * 8) + chunk * 8
                : input_b + ((long long)sy * width + sx) * ((NCH - NA) * 8) + (chunk - NA) * 8;
        }
        copy_16_async(dst, src, inside ? 16u : 0u);
    }
}

// Stage tile `tile` into `stage` with the whole block (nothing past the last tile).
template <int NCH, int NA, int BORDER>
__device__ __forceinline__ void stage_tile(
    const half_bits* __restrict__ input, const half_bits* __restrict__ input_b,
    const int* __restrict__ remap, u32 stage, int tile, int tiles_x, int tiles, int height,
    int width)
{
    if (tile < tiles) {
        stage_pixels<NCH, NA, BORDER, 0>(input, input_b, remap, stage, tile, tiles_x, height,
            width, threadIdx.x, blockDim.x);
    }
}

// act: 0 = none, 1 = PReLU / LeakyReLU with slope[co] for negative values.
// swap: 1 exchanges the two core-matrix offsets in the descriptors (a diagnostic: the test
// runs it once to show which reading of the descriptor format the hardware has).
// block: 0 = NHWC output of out_channels channels; 2, 3 or 4 = depth-to-space into planar
// float `planar` (residual: add the nearest-upsampled planar float input `residual`).
template <int NCH, int NA, int BORDER>
__device__ __forceinline__ void conv_wgmma(
    const half_bits* __restrict__ input, const half_bits* __restrict__ input_b,
    const int* __restrict__ remap, const uint4* __restrict__ weight,
    const float* __restrict__ bias, const float* __restrict__ slope,
    half_bits* __restrict__ output, float* __restrict__ planar,
    const float* __restrict__ residual, int height, int width, int out_channels, int block,
    int act, int swap)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr int WEIGHT_BYTES = 9 * NCH * 1024;
    // A stage buffer also holds the epilogue's transposed output of both warpgroups.
    constexpr int STAGED_BYTES = WG_SR * NCH * WG_SW * 16;
    constexpr int OUT_BYTES = WG_TH * WG_TW * WG_OUT_STRIDE * 2;
    constexpr int STAGE_BYTES = STAGED_BYTES > OUT_BYTES ? STAGED_BYTES : OUT_BYTES;
    const int tid = threadIdx.x;
    const int wg = tid >> 7;
    const int wtid = tid & 127;
    const int warp = wtid >> 5;
    const int lane = tid & 31;
    const int group = lane >> 2;
    const int pair = (lane & 3) * 2;

    uint4* weight_s = reinterpret_cast<uint4*>(smem);
    for (int i = tid; i < WEIGHT_BYTES / 16; i += blockDim.x) {
        weight_s[i] = weight[i];
    }
    const u32 weight_addr = shared_address(smem);
    const u32 stage0 = shared_address(smem + WEIGHT_BYTES);
    const u32 stage1 = stage0 + STAGE_BYTES;

    const int tiles_x = (width + WG_TW - 1) / WG_TW;
    const int tiles = tiles_x * ((height + WG_TH - 1) / WG_TH);
    stage_tile<NCH, NA, BORDER>(input, input_b, remap, stage0, blockIdx.x, tiles_x, tiles, height, width);
    asm volatile("cp.async.commit_group;");
    stage_tile<NCH, NA, BORDER>(input, input_b, remap, stage1, blockIdx.x + gridDim.x, tiles_x, tiles, height, width);
    asm volatile("cp.async.commit_group;");

    const u32 a_lead = swap ? 128 : 1024, a_stride = swap ? 1024 : 128;
    const u32 b_lead = swap ? 128 : WG_SW * 16, b_stride = swap ? WG_SW * 16 : 128;
    // This thread's output channels in the accumulator fragment.
    const int co_lo = warp * 16 + group;
    const int co_hi = co_lo + 8;
    const float bias_lo = bias[co_lo], bias_hi = bias[co_hi];
    const float slope_lo = act ? slope[co_lo] : 1.0f, slope_hi = act ? slope[co_hi] : 1.0f;
    const int out_chunks = out_channels / 8;

    int it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x, ++it) {
        const int buf = it & 1;
        const u32 stage = buf ? stage1 : stage0;
        asm volatile("cp.async.wait_group 1;");
        asm volatile("fence.proxy.async.shared::cta;");
        __syncthreads();

        float d[64];
        #pragma unroll
        for (int i = 0; i < 64; ++i) {
            d[i] = 0.0f;
        }
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        #pragma unroll
        for (int tap = 0; tap < 9; ++tap) {
            const int ky = tap / 3, kx = tap % 3;
            #pragma unroll
            for (int s = 0; s < NCH / 2; ++s) {
                const u64 desc_a = descriptor(weight_addr + (tap * NCH + 2 * s) * 1024, a_lead, a_stride);
                const u64 desc_b = descriptor(
                    stage + (((wg + ky) * NCH + 2 * s) * WG_SW + kx) * 16, b_lead, b_stride);
                wgmma_m64n128k16(d, desc_a, desc_b, 1);
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        __syncthreads();   // both warpgroups are done reading the staged input

        const int y = (tile / tiles_x) * WG_TH + wg;
        const int x0 = (tile % tiles_x) * WG_TW;
        if (block == 0) {
            // Bias and activation, then through the spent stage buffer (transposed to
            // [pixel][channel]) so the stores to the output are whole 16-byte pieces.
            half_bits* out_s = reinterpret_cast<half_bits*>(smem + WEIGHT_BYTES + buf * STAGE_BYTES)
                + wg * WG_TW * WG_OUT_STRIDE;
            #pragma unroll
            for (int j = 0; j < WG_TW / 8; ++j) {
                #pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const bool hi = e >= 2;
                    float v = d[4 * j + e] + (hi ? bias_hi : bias_lo);
                    if (v < 0.0f) {
                        v *= hi ? slope_hi : slope_lo;
                    }
                    const int px = 8 * j + pair + (e & 1);
                    out_s[px * WG_OUT_STRIDE + (hi ? co_hi : co_lo)] = to_half(v);
                }
            }
            asm volatile("bar.sync %0, 128;" :: "r"(1 + wg));
            if (y < height) {
                for (int idx = wtid; idx < WG_TW * out_chunks; idx += 128) {
                    const int px = idx / out_chunks, chunk = idx - px * out_chunks;
                    if (x0 + px < width) {
                        *reinterpret_cast<uint4*>(output + ((long long)y * width + x0 + px) * out_channels + chunk * 8) =
                            *reinterpret_cast<const uint4*>(out_s + px * WG_OUT_STRIDE + chunk * 8);
                    }
                }
            }
        } else if (y < height) {
            // Depth-to-space: output channel m = c * block^2 + i * block + j goes to
            // planar[c][y * block + i][x * block + j].
            const int bb = block * block;
            const long long plane = (long long)height * block * width * block;
            #pragma unroll
            for (int j = 0; j < WG_TW / 8; ++j) {
                #pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const bool hi = e >= 2;
                    const int m = hi ? co_hi : co_lo;
                    const int x = x0 + 8 * j + pair + (e & 1);
                    if (m >= 3 * bb || x >= width) {
                        continue;
                    }
                    float v = d[4 * j + e] + (hi ? bias_hi : bias_lo);
                    if (act && v < 0.0f) {
                        v *= hi ? slope_hi : slope_lo;
                    }
                    const int c = m / bb, i = (m % bb) / block, jj = m % block;
                    if (residual) {
                        v += residual[(long long)c * height * width + (long long)y * width + x];
                    }
                    planar[c * plane + (long long)(y * block + i) * width * block + x * block + jj] = v;
                }
            }
        }
        __syncthreads();   // the buffer is free for the tile after next
        stage_tile<NCH, NA, BORDER>(input, input_b, remap, stage, tile + 2 * gridDim.x, tiles_x, tiles, height, width);
        asm volatile("cp.async.commit_group;");
    }
    asm volatile("cp.async.wait_group 0;");
}

// The ping-pong form. Each warpgroup takes whole tiles (both rows: two accumulator sets)
// with its own stage buffer, and the two warpgroups take turns on the tensor cores: a
// warpgroup queues its tile's wgmma only after the other has queued its own (named
// barriers 1 and 2), so while one warpgroup waits for its results, stages its next tile and
// runs its epilogue, the tensor cores work through the other's queue. Nothing is shared
// between the warpgroups but the weights, so there is no block-wide barrier after the
// start. The epilogue stores straight from the registers (channel pairs exchanged between
// neighbouring lanes so each store is 4 bytes), since the stage buffer is refilling then.

// Stage `tile` into `stage` with the 128 threads of one warpgroup.
template <int NCH, int NA, int BORDER, int SWZ>
__device__ __forceinline__ void stage_tile_wg(
    const half_bits* __restrict__ input, const half_bits* __restrict__ input_b,
    const int* __restrict__ remap, u32 stage, int tile, int tiles_x, int height, int width,
    int wtid)
{
    stage_pixels<NCH, NA, BORDER, SWZ>(input, input_b, remap, stage, tile, tiles_x, height,
        width, wtid, 128);
}

// Queue one output row's 9 x NCH / 2 wgmma (staged row `row` of the tile) into `d`. With
// SWZ the staged input is 128-byte swizzled, [row][column][64 channels]: a tap's window is
// a start address one 128-byte line (one pixel) further on, with base offset 0 (the
// hardware swizzles by address bits: measured right at every offset, where taking the base
// offset from the start address was wrong).
template <int NCH, int SWZ>
__device__ __forceinline__ void queue_row(float* d, u32 weight_addr, u32 stage, int row)
{
    #pragma unroll
    for (int tap = 0; tap < 9; ++tap) {
        const int ky = tap / 3, kx = tap % 3;
        #pragma unroll
        for (int s = 0; s < NCH / 2; ++s) {
            const u64 desc_a = descriptor(weight_addr + (tap * NCH + 2 * s) * 1024, 1024, 128);
            u64 desc_b;
            if (SWZ) {
                desc_b = descriptor_swizzled(stage + ((row + ky) * WG_SW + kx) * 128 + 32 * s, 0);
            } else {
                desc_b = descriptor(
                    stage + (((row + ky) * NCH + 2 * s) * WG_SW + kx) * 16, WG_SW * 16, 128);
            }
            wgmma_m64n128k16(d, desc_a, desc_b, tap + s > 0);
        }
    }
}

struct RowEpilogue {
    half_bits* output;
    float* planar;
    const float* residual;
    int height, width, out_channels, block;
    int co_lo, co_hi, pair, even;
    float bias_lo, bias_hi, slope_lo, slope_hi;
    // Depth-to-space (block > 0): where this thread's two channels go, worked out once
    // (the divisions by block per store made the folded tail 5x slower than a body layer,
    // ncu 1.45 ms against 0.32): the offset of channel lo/hi's plane + sub-row + sub-column
    // in `planar` (-1 past the 3 * block^2 channels), and of its residual plane.
    int d2s_lo, d2s_hi, res_lo, res_hi;
};

// Where output channel `m` goes under depth-to-space by `block` (see store_row): the offset
// of its plane, sub-row and sub-column, or -1 for a channel past the image's.
__device__ __forceinline__ int d2s_offset(int m, int height, int width, int block) {
    const int bb = block * block;
    if (block == 0 || m >= 3 * bb) {
        return -1;
    }
    const int c = m / bb, i = (m % bb) / block, jj = m % block;
    return c * height * block * width * block + i * width * block + jj;
}

// Bias, activation and the stores of output row `y` (pixels from x0) from `d`.
__device__ __forceinline__ void store_row(const float* d, int y, int x0, const RowEpilogue& e)
{
    if (y >= e.height) {
        return;
    }
    if (e.block == 0) {
        half_bits* row = e.output + (long long)y * e.width * e.out_channels;
        #pragma unroll
        for (int j = 0; j < WG_TW / 8; ++j) {
            const int p0 = x0 + 8 * j + e.pair;
            #pragma unroll
            for (int hi = 0; hi < 2; ++hi) {
                float v0 = d[4 * j + 2 * hi] + (hi ? e.bias_hi : e.bias_lo);
                float v1 = d[4 * j + 2 * hi + 1] + (hi ? e.bias_hi : e.bias_lo);
                const float s = hi ? e.slope_hi : e.slope_lo;
                v0 = v0 < 0.0f ? v0 * s : v0;
                v1 = v1 < 0.0f ? v1 * s : v1;
                const u32 h0 = to_half(v0), h1 = to_half(v1);
                // Lanes with an even channel keep pixel p0 and take the odd channel's value
                // there; lanes with the odd channel keep pixel p0 + 1.
                const u32 recv = __shfl_xor_sync(0xffffffffu, e.even ? h1 : h0, 4);
                const u32 packed = e.even ? (h0 | (recv << 16)) : (recv | (h1 << 16));
                const int px = e.even ? p0 : p0 + 1;
                const int co = (hi ? e.co_hi : e.co_lo) & ~1;
                if (px < e.width && co < e.out_channels) {
                    *reinterpret_cast<u32*>(row + (long long)px * e.out_channels + co) = packed;
                }
            }
        }
        return;
    }
    // Depth-to-space: output channel m = c * block^2 + i * block + j goes to
    // planar[c][y * block + i][x * block + j]; per row only x varies.
    const int out_row = y * e.block * e.width * e.block;
    float* dst_lo = e.d2s_lo >= 0 ? e.planar + e.d2s_lo + out_row : nullptr;
    float* dst_hi = e.d2s_hi >= 0 ? e.planar + e.d2s_hi + out_row : nullptr;
    const float* res_lo = e.residual ? e.residual + e.res_lo + y * e.width : nullptr;
    const float* res_hi = e.residual ? e.residual + e.res_hi + y * e.width : nullptr;
    #pragma unroll
    for (int j = 0; j < WG_TW / 8; ++j) {
        #pragma unroll
        for (int k = 0; k < 4; ++k) {
            const bool hi = k >= 2;
            float* dst = hi ? dst_hi : dst_lo;
            const int x = x0 + 8 * j + e.pair + (k & 1);
            if (!dst || x >= e.width) {
                continue;
            }
            float v = d[4 * j + k] + (hi ? e.bias_hi : e.bias_lo);
            if (v < 0.0f) {
                v *= hi ? e.slope_hi : e.slope_lo;
            }
            const float* res = hi ? res_hi : res_lo;
            if (res) {
                v += res[x];
            }
            dst[x * e.block] = v;
        }
    }
}

template <int NCH, int NA, int BORDER, int SWZ>
__device__ __forceinline__ void conv_wgmma_pingpong(
    const half_bits* __restrict__ input, const half_bits* __restrict__ input_b,
    const int* __restrict__ remap, const uint4* __restrict__ weight,
    const float* __restrict__ bias, const float* __restrict__ slope,
    half_bits* __restrict__ output, float* __restrict__ planar,
    const float* __restrict__ residual, int height, int width, int out_channels, int block,
    int act, int swap)
{
    extern __shared__ __align__(1024) unsigned char smem[];
    constexpr int WEIGHT_BYTES = 9 * NCH * 1024;
    constexpr int STAGED_BYTES = WG_SR * NCH * WG_SW * 16;
    const int tid = threadIdx.x;
    const int wg = tid >> 7;
    const int wtid = tid & 127;
    const int warp = wtid >> 5;
    const int lane = tid & 31;
    const int group = lane >> 2;
    // SWZ: the staged input 128-byte swizzled (8 chunks of 8 channels a pixel only).
    static_assert(!SWZ || NCH == 8, "the swizzled staging takes 64 channels a pixel");

    uint4* weight_s = reinterpret_cast<uint4*>(smem);
    const u32 weight_addr = shared_address(smem);
    for (int i = tid; i < WEIGHT_BYTES / 16; i += blockDim.x) {
        weight_s[i] = weight[i];
    }
    const u32 stage = shared_address(smem + WEIGHT_BYTES) + wg * STAGED_BYTES;

    const int tiles_x = (width + WG_TW - 1) / WG_TW;
    const int tiles = tiles_x * ((height + WG_TH - 1) / WG_TH);
    const int grid = gridDim.x;
    // This block's tiles are blockIdx.x + k * grid; warpgroup wg takes k = wg, wg + 2, ...
    const int mine = blockIdx.x < tiles ? (tiles - blockIdx.x + grid - 1) / grid : 0;
    const int rounds = (mine + 1) / 2;
    int k = wg;
    if (k < mine) {
        stage_tile_wg<NCH, NA, BORDER, SWZ>(input, input_b, remap, stage, blockIdx.x + k * grid,
            tiles_x, height, width, wtid);
    }
    asm volatile("cp.async.commit_group;");
    asm volatile("fence.proxy.async.shared::cta;");
    __syncthreads();   // the weights are in

    RowEpilogue e;
    e.output = output;
    e.planar = planar;
    e.residual = residual;
    e.height = height;
    e.width = width;
    e.out_channels = out_channels;
    e.block = block;
    e.co_lo = warp * 16 + group;
    e.co_hi = e.co_lo + 8;
    e.pair = (lane & 3) * 2;
    e.even = (group & 1) == 0;
    e.bias_lo = bias[e.co_lo];
    e.bias_hi = bias[e.co_hi];
    e.slope_lo = act ? slope[e.co_lo] : 1.0f;
    e.slope_hi = act ? slope[e.co_hi] : 1.0f;
    e.d2s_lo = d2s_offset(e.co_lo, height, width, block);
    e.d2s_hi = d2s_offset(e.co_hi, height, width, block);
    const int bb = block * block;
    e.res_lo = block ? (e.co_lo / (bb > 0 ? bb : 1)) * height * width : 0;
    e.res_hi = block ? (e.co_hi / (bb > 0 ? bb : 1)) * height * width : 0;

    const int my_turn = 1 + wg, their_turn = 2 - wg;
    if (wg == 1 && rounds > 0) {
        asm volatile("bar.arrive 1, 256;" ::: "memory");   // warpgroup 0 goes first
    }
    float row0[64], row1[64];
    for (int r = 0; r < rounds; ++r, k += 2) {
        const bool have = k < mine;
        const int tile = blockIdx.x + k * grid;
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync %0, 128;" :: "r"(3 + wg) : "memory");   // the tile is staged
        asm volatile("bar.sync %0, 256;" :: "r"(my_turn) : "memory");
        // Queued on every round, with or without a tile (then on stale data, never stored):
        // wgmma on a path the compiler cannot prove uniform is serialized (ptxas C7518).
        asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
        queue_row<NCH, SWZ>(row0, weight_addr, stage, 0);
        queue_row<NCH, SWZ>(row1, weight_addr, stage, 1);
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        // The other warpgroup may queue its tile now. Warpgroup 1 skips this in the last
        // round: warpgroup 0 waits on barrier 1 once a round, and the first arrival there
        // was the one before the loop, so the arrivals balance the waits exactly.
        if (wg == 0 || r < rounds - 1) {
            asm volatile("bar.arrive %0, 256;" :: "r"(their_turn) : "memory");
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
        asm volatile("bar.sync %0, 128;" :: "r"(3 + wg) : "memory");   // all read the buffer
        if (k + 2 < mine) {
            stage_tile_wg<NCH, NA, BORDER, SWZ>(input, input_b, remap, stage,
                blockIdx.x + (k + 2) * grid, tiles_x, height, width, wtid);
        }
        asm volatile("cp.async.commit_group;");
        if (have) {
            const int y0 = (tile / tiles_x) * WG_TH;
            const int x0 = (tile % tiles_x) * WG_TW;
            store_row(row0, y0, x0, e);
            store_row(row1, y0 + 1, x0, e);
        }
    }
    asm volatile("cp.async.wait_group 0;");
}

#define WGMMA_KERNEL(NAME, FORM)                                                  \
    extern "C" __global__ void __launch_bounds__(256, 1) NAME(                                \
        const half_bits* __restrict__ input, const half_bits* __restrict__ input_b,           \
        const int* __restrict__ remap, const uint4* __restrict__ weight,                      \
        const float* __restrict__ bias, const float* __restrict__ slope,                      \
        half_bits* __restrict__ output, float* __restrict__ planar,                           \
        const float* __restrict__ residual, int height, int width, int out_channels,          \
        int block, int act, int swap)                                                         \
    {                                                                                         \
        FORM(input, input_b, remap, weight, bias, slope, output,             \
            planar, residual, height, width, out_channels, block, act, swap);                 \
    }

// The body and last layers (64 channels in), the first layer (16: the RGB input padded),
// and the folded tail (48 from the last layer, 16 from the padded input, remapped edges).
WGMMA_KERNEL(conv3x3_wgmma_c64, (conv_wgmma_pingpong<8, 8, BORDER_ZERO, 1>))
WGMMA_KERNEL(conv3x3_wgmma_c16, (conv_wgmma_pingpong<2, 2, BORDER_ZERO, 0>))
WGMMA_KERNEL(conv3x3_wgmma_folded_tail, (conv_wgmma_pingpong<8, 6, BORDER_REMAP, 1>))
// Forms kept to measure against: the ping-pong without swizzle, and the serial form (both
// warpgroups on one tile, the epilogue between tiles), which also runs the
// swapped-descriptor diagnostic.
WGMMA_KERNEL(conv3x3_wgmma_c64_unswizzled, (conv_wgmma_pingpong<8, 8, BORDER_ZERO, 0>))
WGMMA_KERNEL(conv3x3_wgmma_c64_serial, (conv_wgmma<8, 8, BORDER_ZERO>))
