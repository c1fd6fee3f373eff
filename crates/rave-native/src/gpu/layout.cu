// RAVE native engine: layout kernels at the network's edges.

typedef unsigned short half_bits;

__device__ __forceinline__ half_bits to_half(float v) {
    half_bits h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    return h;
}

// Planar float RGB [3][H][W] -> NHWC half with 16 channels a pixel (RGB, then zeros): the
// input of the first layer and of the folded tail. One thread per pixel.
extern "C" __global__ void pack_rgb_nhwc16(
    const float* __restrict__ planar, half_bits* __restrict__ packed, int height, int width)
{
    const long long pixels = (long long)height * width;
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pixels) {
        return;
    }
    const unsigned int r = to_half(planar[p]);
    const unsigned int g = to_half(planar[pixels + p]);
    const unsigned int b = to_half(planar[2 * pixels + p]);
    uint4* out = reinterpret_cast<uint4*>(packed + p * 16);
    out[0] = make_uint4(r | (g << 16), b, 0u, 0u);
    out[1] = make_uint4(0u, 0u, 0u, 0u);
}
