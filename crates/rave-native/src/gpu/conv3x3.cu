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
