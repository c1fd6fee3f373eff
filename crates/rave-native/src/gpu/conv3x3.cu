// RAVE native engine: 3x3 convolution (pad 1, stride 1) over NHWC half-precision
// activations on tensor cores (mma.sync m16n8k16, FP16 in, FP32 accumulate), with the
// bias and the activation (PReLU with one slope per output channel, or none) fused into
// the epilogue, so each activation is written once and read once per layer.
//
// Layouts: input  [H][W][cin]   half
//          weight [cout][3][3][cin] half (OHWI)
//          bias, slope [cout]  float
//          output [H][W][cout]  half
// Requires cin % 16 == 0 and cout % 8 == 0. No headers: half values travel as raw
// 16-bit patterns and are converted with PTX.
//
// Grid: x = ceil(W / 64), y = H, z = ceil(cout / 64); block: 128 threads (4 warps). Each
// warp computes 16 consecutive pixels of row y by 64 output channels (8 mma tiles of 8).

typedef unsigned short half_bits;

__device__ __forceinline__ unsigned int load_pair(const half_bits* p) {
    return *reinterpret_cast<const unsigned int*>(p);
}

__device__ __forceinline__ half_bits to_half(float v) {
    half_bits h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

__device__ __forceinline__ void mma_16816(float* c, const unsigned int* a, const unsigned int* b) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// act: 0 = none, 1 = PReLU / LeakyReLU with slope[co] for negative values.
extern "C" __global__ void conv3x3_nhwc_f16(
    const half_bits* __restrict__ input, const half_bits* __restrict__ weight,
    const float* __restrict__ bias, const float* __restrict__ slope,
    half_bits* __restrict__ output, int height, int width, int cin, int cout, int act)
{
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int group = lane >> 2;        // row of the A / C fragments
    const int pair = (lane & 3) * 2;    // column pair of the fragments
    const int y = blockIdx.y;
    const int x_base = blockIdx.x * 64 + warp * 16;
    const int co_base = blockIdx.z * 64;

    float acc[8][4];
    #pragma unroll
    for (int t = 0; t < 8; ++t) {
        acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
    }

    const int x_lo = x_base + group;      // pixels of fragment rows `group` and `group + 8`
    const int x_hi = x_base + group + 8;
    for (int ky = 0; ky < 3; ++ky) {
        const int sy = y + ky - 1;
        const bool row_in = sy >= 0 && sy < height;
        for (int kx = 0; kx < 3; ++kx) {
            const int sx_lo = x_lo + kx - 1;
            const int sx_hi = x_hi + kx - 1;
            const bool in_lo = row_in && sx_lo >= 0 && sx_lo < width;
            const bool in_hi = row_in && sx_hi >= 0 && sx_hi < width;
            const half_bits* p_lo = input + ((long long)sy * width + sx_lo) * cin;
            const half_bits* p_hi = input + ((long long)sy * width + sx_hi) * cin;
            const int tap = ky * 3 + kx;
            for (int c0 = 0; c0 < cin; c0 += 16) {
                unsigned int a[4];
                a[0] = in_lo ? load_pair(p_lo + c0 + pair) : 0u;
                a[1] = in_hi ? load_pair(p_hi + c0 + pair) : 0u;
                a[2] = in_lo ? load_pair(p_lo + c0 + pair + 8) : 0u;
                a[3] = in_hi ? load_pair(p_hi + c0 + pair + 8) : 0u;
                #pragma unroll
                for (int t = 0; t < 8; ++t) {
                    const int co = co_base + t * 8 + group;
                    unsigned int b[2] = {0u, 0u};
                    if (co < cout) {
                        const half_bits* w = weight + ((long long)co * 9 + tap) * cin + c0 + pair;
                        b[0] = load_pair(w);
                        b[1] = load_pair(w + 8);
                    }
                    mma_16816(acc[t], a, b);
                }
            }
        }
    }

    // Epilogue: C fragment (row group / group + 8, columns pair, pair + 1) of each tile.
    #pragma unroll
    for (int t = 0; t < 8; ++t) {
        const int co = co_base + t * 8 + pair;
        if (co >= cout) {
            continue;
        }
        const float b0 = bias[co], b1 = bias[co + 1];
        const float s0 = slope[co], s1 = slope[co + 1];
        #pragma unroll
        for (int half_row = 0; half_row < 2; ++half_row) {
            const int x = half_row ? x_hi : x_lo;
            if (x >= width) {
                continue;
            }
            float v0 = acc[t][half_row * 2] + b0;
            float v1 = acc[t][half_row * 2 + 1] + b1;
            if (act == 1) {
                v0 = v0 < 0.0f ? v0 * s0 : v0;
                v1 = v1 < 0.0f ? v1 * s1 : v1;
            }
            const unsigned int packed =
                (unsigned int)to_half(v0) | ((unsigned int)to_half(v1) << 16);
            *reinterpret_cast<unsigned int*>(output + ((long long)y * width + x) * cout + co) = packed;
        }
    }
}

// Version 2, for layers whose weights fit in shared memory (cin <= 64, cout <= 64): a
// persistent block loads the layer's weights once, then for each tile of 2 rows x 64
// pixels stages the input rows it needs (with the one-pixel border, zeros outside the
// image) in shared memory and runs the nine taps from there. Rows of both arrays are padded
// by 8 halves so the fragment loads of a warp fall in distinct banks.
// Grid: any number of blocks (they stride over the tiles); block: 256 threads (8 warps);
// dynamic shared memory: conv3x3_v2_smem_bytes(cin).
#define V2_TH 2
#define V2_TW 64

extern "C" __global__ void conv3x3_nhwc_f16_v2(
    const half_bits* __restrict__ input, const half_bits* __restrict__ weight,
    const float* __restrict__ bias, const float* __restrict__ slope,
    half_bits* __restrict__ output, int height, int width, int cin, int cout, int act)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const int w_stride = 9 * cin + 8;               // halves per output channel
    const int p_stride = cin + 8;                   // halves per staged pixel
    half_bits* w_s = reinterpret_cast<half_bits*>(smem);
    half_bits* in_s = w_s + 64 * w_stride;
    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int group = lane >> 2;
    const int pair = (lane & 3) * 2;

    // The weights, once: 64 output channels (zeros past cout), 9 * cin halves each.
    const int w_chunks = 9 * cin / 8;
    for (int i = tid; i < 64 * w_chunks; i += blockDim.x) {
        const int co = i / w_chunks, k = (i % w_chunks) * 8;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (co < cout) {
            v = *reinterpret_cast<const uint4*>(weight + (long long)co * 9 * cin + k);
        }
        *reinterpret_cast<uint4*>(w_s + co * w_stride + k) = v;
    }

    const int tiles_x = (width + V2_TW - 1) / V2_TW;
    const int tiles_y = (height + V2_TH - 1) / V2_TH;
    const int row = warp >> 2;                       // this warp's row in the tile
    const int seg = (warp & 3) * 16;                 // its 16 pixels in the row
    const int p_chunks = cin / 8;
    const int staged = (V2_TH + 2) * (V2_TW + 2);
    for (int tile = blockIdx.x; tile < tiles_x * tiles_y; tile += gridDim.x) {
        const int y0 = (tile / tiles_x) * V2_TH;
        const int x0 = (tile % tiles_x) * V2_TW;
        __syncthreads();   // the previous tile's reads are done (and the weights are in)
        for (int i = tid; i < staged * p_chunks; i += blockDim.x) {
            const int px = i / p_chunks, k = (i % p_chunks) * 8;
            const int sy = y0 - 1 + px / (V2_TW + 2);
            const int sx = x0 - 1 + px % (V2_TW + 2);
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (sy >= 0 && sy < height && sx >= 0 && sx < width) {
                v = *reinterpret_cast<const uint4*>(input + ((long long)sy * width + sx) * cin + k);
            }
            *reinterpret_cast<uint4*>(in_s + px * p_stride + k) = v;
        }
        __syncthreads();

        float acc[8][4];
        #pragma unroll
        for (int t = 0; t < 8; ++t) {
            acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.0f;
        }
        for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
                const half_bits* a_lo = in_s + ((row + ky) * (V2_TW + 2) + seg + group + kx) * p_stride;
                const half_bits* a_hi = a_lo + 8 * p_stride;
                const half_bits* b_base = w_s + group * w_stride + (ky * 3 + kx) * cin;
                for (int c0 = 0; c0 < cin; c0 += 16) {
                    unsigned int a[4];
                    a[0] = load_pair(a_lo + c0 + pair);
                    a[1] = load_pair(a_hi + c0 + pair);
                    a[2] = load_pair(a_lo + c0 + pair + 8);
                    a[3] = load_pair(a_hi + c0 + pair + 8);
                    #pragma unroll
                    for (int t = 0; t < 8; ++t) {
                        const half_bits* b = b_base + t * 8 * w_stride + c0 + pair;
                        unsigned int bf[2] = {load_pair(b), load_pair(b + 8)};
                        mma_16816(acc[t], a, bf);
                    }
                }
            }
        }

        const int y = y0 + row;
        if (y >= height) {
            continue;
        }
        #pragma unroll
        for (int t = 0; t < 8; ++t) {
            const int co = t * 8 + pair;
            if (co >= cout) {
                continue;
            }
            const float b0 = bias[co], b1 = bias[co + 1];
            const float s0 = slope[co], s1 = slope[co + 1];
            #pragma unroll
            for (int half_row = 0; half_row < 2; ++half_row) {
                const int x = x0 + seg + group + half_row * 8;
                if (x >= width) {
                    continue;
                }
                float v0 = acc[t][half_row * 2] + b0;
                float v1 = acc[t][half_row * 2 + 1] + b1;
                if (act == 1) {
                    v0 = v0 < 0.0f ? v0 * s0 : v0;
                    v1 = v1 < 0.0f ? v1 * s1 : v1;
                }
                const unsigned int packed =
                    (unsigned int)to_half(v0) | ((unsigned int)to_half(v1) << 16);
                *reinterpret_cast<unsigned int*>(output + ((long long)y * width + x) * cout + co) = packed;
            }
        }
    }
}
