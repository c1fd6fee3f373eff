// RAVE colour-conversion kernels, compiled at start-up by NVRTC (no CUDA headers needed).
// They mirror src/reference.rs operation for operation (compile with --fmad=false), so the
// plain Rust versions are their oracle.
//
// Layout ids: 0 NV12, 1 P010, 2 planar 8-bit, 3 planar 16-bit (10 bits low).

struct Coef {
    float kr, kg, kb, y_off, y_scale, c_off, c_scale, max_code;
};

__device__ __forceinline__ float y_at(int F, const unsigned char* base, unsigned long long pitch, int x, int row) {
    const unsigned char* line = base + (unsigned long long)row * pitch;
    if (F == 0 || F == 2) return (float)line[x];
    unsigned short s = ((const unsigned short*)line)[x];
    return F == 1 ? (float)(s >> 6) : (float)s;
}

__device__ __forceinline__ float c_at(int F, const unsigned char* u, const unsigned char* v,
                                      unsigned long long pitch, int i, int j, int comp) {
    if (F == 0) return (float)(u + (unsigned long long)j * pitch)[2 * i + comp];
    if (F == 1) {
        unsigned short s = ((const unsigned short*)(u + (unsigned long long)j * pitch))[2 * i + comp];
        return (float)(s >> 6);
    }
    const unsigned char* p = (comp == 0 ? u : v) + (unsigned long long)j * pitch;
    if (F == 2) return (float)p[i];
    return (float)((const unsigned short*)p)[i];
}

__device__ __forceinline__ void put_y(int F, unsigned char* base, unsigned long long pitch, int x, int row, unsigned short code) {
    unsigned char* line = base + (unsigned long long)row * pitch;
    if (F == 0 || F == 2) line[x] = (unsigned char)code;
    else ((unsigned short*)line)[x] = F == 1 ? (unsigned short)(code << 6) : code;
}

__device__ __forceinline__ void put_c(int F, unsigned char* u, unsigned char* v, unsigned long long pitch,
                                      int i, int j, unsigned short cb, unsigned short cr) {
    if (F == 0) {
        unsigned char* line = u + (unsigned long long)j * pitch;
        line[2 * i] = (unsigned char)cb;
        line[2 * i + 1] = (unsigned char)cr;
    } else if (F == 1) {
        unsigned short* line = (unsigned short*)(u + (unsigned long long)j * pitch);
        line[2 * i] = (unsigned short)(cb << 6);
        line[2 * i + 1] = (unsigned short)(cr << 6);
    } else if (F == 2) {
        (u + (unsigned long long)j * pitch)[i] = (unsigned char)cb;
        (v + (unsigned long long)j * pitch)[i] = (unsigned char)cr;
    } else {
        ((unsigned short*)(u + (unsigned long long)j * pitch))[i] = cb;
        ((unsigned short*)(v + (unsigned long long)j * pitch))[i] = cr;
    }
}

__device__ __forceinline__ void store(float* o, unsigned long long i, float v) { o[i] = v; }
__device__ __forceinline__ void store(unsigned short* o, unsigned long long i, float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
    o[i] = h;
}
__device__ __forceinline__ float load(const float* p, unsigned long long i) { return p[i]; }
__device__ __forceinline__ float load(const unsigned short* p, unsigned long long i) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
    return f;
}

__device__ __forceinline__ float clamp01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }
__device__ __forceinline__ unsigned short quantise(const Coef& k, float v) {
    return (unsigned short)fminf(fmaxf(roundf(v), 0.0f), k.max_code);
}

template <int F, typename T>
__device__ void yuv_to_rgb(const unsigned char* yp, unsigned long long y_pitch, const unsigned char* up,
                           const unsigned char* vp, unsigned long long c_pitch, T* out, int w, int h, Coef k) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    int j = y / 2, j0, j1;
    float fy;
    if ((y & 1) == 0) {
        j0 = j > 0 ? j - 1 : 0;
        j1 = j;
        fy = j == 0 ? 1.0f : 0.75f;
    } else {
        j0 = j;
        j1 = min(j + 1, ch - 1);
        fy = 0.25f;
    }
    int i0 = x / 2;
    int i1 = (x & 1) ? min(i0 + 1, cw - 1) : i0;
    float c[2];
    for (int comp = 0; comp < 2; comp++) {
        float top = 0.5f * (c_at(F, up, vp, c_pitch, i0, j0, comp) + c_at(F, up, vp, c_pitch, i1, j0, comp));
        float bottom = 0.5f * (c_at(F, up, vp, c_pitch, i0, j1, comp) + c_at(F, up, vp, c_pitch, i1, j1, comp));
        c[comp] = top + fy * (bottom - top);
    }
    float yn = (y_at(F, yp, y_pitch, x, y) - k.y_off) / k.y_scale;
    float cbn = (c[0] - k.c_off) / k.c_scale;
    float crn = (c[1] - k.c_off) / k.c_scale;
    float r = yn + 2.0f * (1.0f - k.kr) * crn;
    float b = yn + 2.0f * (1.0f - k.kb) * cbn;
    float g = (yn - k.kr * r - k.kb * b) / k.kg;
    unsigned long long plane = (unsigned long long)w * h, idx = (unsigned long long)y * w + x;
    store(out, idx, clamp01(r));
    store(out, plane + idx, clamp01(g));
    store(out, 2 * plane + idx, clamp01(b));
}

template <typename T>
__device__ __forceinline__ void chroma_of(const T* in, unsigned long long plane, unsigned long long idx,
                                          const Coef& k, float* cb, float* cr) {
    float r = clamp01(load(in, idx)), g = clamp01(load(in, plane + idx)), b = clamp01(load(in, 2 * plane + idx));
    float yn = k.kr * r + k.kg * g + k.kb * b;
    *cb = (b - yn) / (2.0f * (1.0f - k.kb));
    *cr = (r - yn) / (2.0f * (1.0f - k.kr));
}

template <typename T, int F>
__device__ void rgb_to_yuv(const T* in, int w, int h, unsigned char* yp, unsigned long long y_pitch,
                           unsigned char* up, unsigned char* vp, unsigned long long c_pitch, Coef k) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    unsigned long long plane = (unsigned long long)w * h, idx = (unsigned long long)y * w + x;
    float r = clamp01(load(in, idx)), g = clamp01(load(in, plane + idx)), b = clamp01(load(in, 2 * plane + idx));
    float yn = k.kr * r + k.kg * g + k.kb * b;
    put_y(F, yp, y_pitch, x, y, quantise(k, k.y_off + k.y_scale * yn));
    if ((x & 1) || (y & 1)) return;
    int rows[2] = {y, min(y + 1, h - 1)};
    int cols[3] = {x > 0 ? x - 1 : 0, x, min(x + 1, w - 1)};
    float acc_cb = 0.0f, acc_cr = 0.0f;
    for (int n = 0; n < 2; n++) {
        float cb[3], cr[3];
        for (int m = 0; m < 3; m++) {
            chroma_of(in, plane, (unsigned long long)rows[n] * w + cols[m], k, &cb[m], &cr[m]);
        }
        acc_cb += 0.25f * cb[0] + 0.5f * cb[1];
        acc_cb += 0.25f * cb[2];
        acc_cr += 0.25f * cr[0] + 0.5f * cr[1];
        acc_cr += 0.25f * cr[2];
    }
    acc_cb *= 0.5f;
    acc_cr *= 0.5f;
    put_c(F, up, vp, c_pitch, x / 2, y / 2, quantise(k, k.c_off + k.c_scale * acc_cb),
          quantise(k, k.c_off + k.c_scale * acc_cr));
}

#define YUV_TO_RGB(NAME, F, T)                                                                          \
    extern "C" __global__ void NAME(const unsigned char* yp, unsigned long long y_pitch,                \
                                    const unsigned char* up, const unsigned char* vp,                   \
                                    unsigned long long c_pitch, T* out, int w, int h, Coef k) {         \
        yuv_to_rgb<F, T>(yp, y_pitch, up, vp, c_pitch, out, w, h, k);                                   \
    }
#define RGB_TO_YUV(NAME, T, F)                                                                          \
    extern "C" __global__ void NAME(const T* in, int w, int h, unsigned char* yp,                       \
                                    unsigned long long y_pitch, unsigned char* up, unsigned char* vp,   \
                                    unsigned long long c_pitch, Coef k) {                               \
        rgb_to_yuv<T, F>(in, w, h, yp, y_pitch, up, vp, c_pitch, k);                                    \
    }

YUV_TO_RGB(yuv0_to_rgb_f32, 0, float)
YUV_TO_RGB(yuv1_to_rgb_f32, 1, float)
YUV_TO_RGB(yuv2_to_rgb_f32, 2, float)
YUV_TO_RGB(yuv3_to_rgb_f32, 3, float)
YUV_TO_RGB(yuv0_to_rgb_f16, 0, unsigned short)
YUV_TO_RGB(yuv1_to_rgb_f16, 1, unsigned short)
YUV_TO_RGB(yuv2_to_rgb_f16, 2, unsigned short)
YUV_TO_RGB(yuv3_to_rgb_f16, 3, unsigned short)
RGB_TO_YUV(rgb_f32_to_yuv0, float, 0)
RGB_TO_YUV(rgb_f32_to_yuv1, float, 1)
RGB_TO_YUV(rgb_f32_to_yuv2, float, 2)
RGB_TO_YUV(rgb_f32_to_yuv3, float, 3)
RGB_TO_YUV(rgb_f16_to_yuv0, unsigned short, 0)
RGB_TO_YUV(rgb_f16_to_yuv1, unsigned short, 1)
RGB_TO_YUV(rgb_f16_to_yuv2, unsigned short, 2)
RGB_TO_YUV(rgb_f16_to_yuv3, unsigned short, 3)
