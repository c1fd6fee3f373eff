// RAVE tiling kernels (issue 13), compiled at start-up by NVRTC (no CUDA headers needed):
// cutting a tile's input out of a planar RGB frame, and blending the upscaled tiles back.
// Each tile's output is added into an f32 sum with the plan's separable weights (one launch
// a tile, in the plan's order on one stream, so no atomics), then the sums are divided by
// the weights. Operation for operation the same as rave_core::tiling::TilePlan::{extract,
// blend} (compile with --fmad=false): for F32 the results equal the host's bit for bit.
//
// A tile may reach past the frame's right and bottom border (a model whose sides must be
// multiples of a block, on a frame that is not): the crop reads the frame mirrored there
// (rave_core::tiling::mirror), and the blend leaves out what lies outside the output.
//
// Planar layouts: a frame is [channels][height][width] of F32 (float) or F16 (the bits of
// a half in an unsigned short). Grid: x over columns, y over rows, z over channels (crop) or
// 1 (the others); blocks of 32 x 8.

__device__ __forceinline__ float load(const float* p, long long i) { return p[i]; }

__device__ __forceinline__ float load(const unsigned short* p, long long i) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
    return f;
}

__device__ __forceinline__ void store(float* p, long long i, float v) { p[i] = v; }

__device__ __forceinline__ void store(unsigned short* p, long long i, float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    p[i] = h;
}

// Where position i (0 or more) of a side of n pixels reads: i inside, mirrored about the last
// pixel past it (the last not repeated), back and forth for a pad longer than the side.
__device__ __forceinline__ int mirror(int i, int n) {
    if (i < n) {
        return i;
    }
    if (n == 1) {
        return 0;
    }
    const int period = 2 * (n - 1);
    const int r = i % period;
    return r < n ? r : period - r;
}

// dst[c][ty][tx] = src[c][y0 + ty][x0 + tx] for the tw x th tile at (x0, y0) of a fw x fh frame
// (mirrored past its right and bottom border).
template <typename T>
__device__ __forceinline__ void crop(const T* __restrict__ src, int fw, int fh,
                                     T* __restrict__ dst, int x0, int y0, int tw, int th) {
    const int tx = blockIdx.x * blockDim.x + threadIdx.x;
    const int ty = blockIdx.y * blockDim.y + threadIdx.y;
    const int c = blockIdx.z;
    if (tx >= tw || ty >= th) {
        return;
    }
    const int sx = mirror(x0 + tx, fw);
    const int sy = mirror(y0 + ty, fh);
    dst[((long long)c * th + ty) * tw + tx] = src[((long long)c * fh + sy) * fw + sx];
}

// For each pixel of the tw x th upscaled tile placed at (x0, y0) of the ow x oh output:
// w = wx[tx] * wy[ty]; weight += w; sum[c] += w * tile[c] (the host's order and rounding);
// pixels of a padded tile outside the output are left out.
template <typename T>
__device__ __forceinline__ void accumulate(const T* __restrict__ tile, int tw, int th,
                                           float* __restrict__ sum, float* __restrict__ weight,
                                           int ow, int oh, int x0, int y0,
                                           const float* __restrict__ wx,
                                           const float* __restrict__ wy, int channels) {
    const int tx = blockIdx.x * blockDim.x + threadIdx.x;
    const int ty = blockIdx.y * blockDim.y + threadIdx.y;
    if (tx >= tw || ty >= th || x0 + tx >= ow || y0 + ty >= oh) {
        return;
    }
    const float w = wx[tx] * wy[ty];
    const long long p = (long long)(y0 + ty) * ow + x0 + tx;
    weight[p] += w;
    const long long plane = (long long)ow * oh;
    for (int c = 0; c < channels; ++c) {
        sum[c * plane + p] += w * load(tile, ((long long)c * th + ty) * tw + tx);
    }
}

// out[c][p] = sum[c][p] / weight[p] over the ow x oh output.
template <typename T>
__device__ __forceinline__ void normalize(const float* __restrict__ sum,
                                          const float* __restrict__ weight,
                                          T* __restrict__ out, int ow, int oh, int channels) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= ow || y >= oh) {
        return;
    }
    const long long p = (long long)y * ow + x;
    const long long plane = (long long)ow * oh;
    const float w = weight[p];
    for (int c = 0; c < channels; ++c) {
        store(out, c * plane + p, sum[c * plane + p] / w);
    }
}

#define TILE_KERNELS(SUFFIX, T)                                                                \
    extern "C" __global__ void tile_crop_##SUFFIX(const T* src, int fw, int fh, T* dst,        \
                                                  int x0, int y0, int tw, int th) {            \
        crop<T>(src, fw, fh, dst, x0, y0, tw, th);                                             \
    }                                                                                          \
    extern "C" __global__ void tile_accumulate_##SUFFIX(const T* tile, int tw, int th,         \
                                                        float* sum, float* weight, int ow,     \
                                                        int oh, int x0, int y0,                \
                                                        const float* wx, const float* wy,      \
                                                        int channels) {                        \
        accumulate<T>(tile, tw, th, sum, weight, ow, oh, x0, y0, wx, wy, channels);            \
    }                                                                                          \
    extern "C" __global__ void tile_normalize_##SUFFIX(const float* sum, const float* weight,  \
                                                       T* out, int ow, int oh, int channels) { \
        normalize<T>(sum, weight, out, ow, oh, channels);                                      \
    }

TILE_KERNELS(f32, float)
TILE_KERNELS(f16, unsigned short)
