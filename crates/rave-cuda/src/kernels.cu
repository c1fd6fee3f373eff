// RAVE colour-conversion kernels, compiled at start-up by NVRTC (no CUDA headers needed).
// They mirror src/reference.rs operation for operation (compile with --fmad=false), so the
// plain Rust versions are their oracle. Each thread handles one chroma sample and the up to
// 2x2 luma pixels it covers, so chroma is read and filtered once and stores pair up.
//
// Layout ids: 0 NV12, 1 P010, 2 planar 8-bit, 3 planar 16-bit (10 bits low).

struct Coef {
    float kr, kg, kb, y_off, y_scale, c_off, c_scale, max_code;
    float inv_y_scale, inv_c_scale, inv_kg, cr_to_r, cb_to_b, cb_from_b, cr_from_r;
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

// Two horizontally adjacent elements; one vector access when `vec` (alignment known).
__device__ __forceinline__ void store2(float* o, unsigned long long i, float a, float b, bool vec) {
    if (vec) {
        *(float2*)(o + i) = make_float2(a, b);
    } else {
        o[i] = a;
        o[i + 1] = b;
    }
}
__device__ __forceinline__ void store2(unsigned short* o, unsigned long long i, float a, float b, bool vec) {
    unsigned short ha, hb;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(ha) : "f"(a));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(hb) : "f"(b));
    if (vec) {
        *(unsigned int*)(o + i) = (unsigned int)ha | ((unsigned int)hb << 16);
    } else {
        o[i] = ha;
        o[i + 1] = hb;
    }
}

// One thread per chroma sample: it converts the (up to) 2x2 luma pixels that sample covers.
template <int F, typename T>
__device__ void yuv_to_rgb(const unsigned char* __restrict__ yp, unsigned long long y_pitch, const unsigned char* __restrict__ up,
                           const unsigned char* __restrict__ vp, unsigned long long c_pitch, T* __restrict__ out, int w, int h, Coef k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    if (i >= cw || j >= ch) return;
    int i1 = min(i + 1, cw - 1);
    int rows[3] = {j > 0 ? j - 1 : 0, j, min(j + 1, ch - 1)};
    float c[2][3][2];
    for (int comp = 0; comp < 2; comp++)
        for (int r = 0; r < 3; r++) {
            c[comp][r][0] = c_at(F, up, vp, c_pitch, i, rows[r], comp);
            c[comp][r][1] = c_at(F, up, vp, c_pitch, i1, rows[r], comp);
        }
    unsigned long long plane = (unsigned long long)w * h;
    bool vec = (w & 1) == 0;
    for (int dy = 0; dy < 2; dy++) {
        int y = 2 * j + dy;
        if (y >= h) break;
        // Chroma rows and weight exactly as reference.rs picks them for this luma row.
        int ra = dy == 0 ? 0 : 1, rb = dy == 0 ? 1 : 2;
        float fy = dy == 0 ? (j == 0 ? 1.0f : 0.75f) : 0.25f;
        float px[2][3];
        for (int dx = 0; dx < 2; dx++) {
            int x = 2 * i + dx;
            if (x >= w) break;
            float cc[2];
            for (int comp = 0; comp < 2; comp++) {
                // Even columns sit on chroma column i; odd ones average it with the next.
                float top = 0.5f * (c[comp][ra][0] + c[comp][ra][dx]);
                float bottom = 0.5f * (c[comp][rb][0] + c[comp][rb][dx]);
                cc[comp] = top + fy * (bottom - top);
            }
            float yn = (y_at(F, yp, y_pitch, x, y) - k.y_off) * k.inv_y_scale;
            float cbn = (cc[0] - k.c_off) * k.inv_c_scale;
            float crn = (cc[1] - k.c_off) * k.inv_c_scale;
            float r = yn + k.cr_to_r * crn;
            float b = yn + k.cb_to_b * cbn;
            float g = (yn - k.kr * r - k.kb * b) * k.inv_kg;
            px[dx][0] = clamp01(r);
            px[dx][1] = clamp01(g);
            px[dx][2] = clamp01(b);
        }
        unsigned long long idx = (unsigned long long)y * w + 2 * i;
        for (int p = 0; p < 3; p++) {
            if (2 * i + 1 < w) {
                store2(out, p * plane + idx, px[0][p], px[1][p], vec);
            } else {
                store(out, p * plane + idx, px[0][p]);
            }
        }
    }
}

// One thread per chroma sample: the luma of its (up to) 2x2 pixels and the filtered chroma.
template <typename T, int F>
__device__ void rgb_to_yuv(const T* __restrict__ in, int w, int h, unsigned char* yp, unsigned long long y_pitch,
                           unsigned char* up, unsigned char* vp, unsigned long long c_pitch, Coef k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    if (i >= cw || j >= ch) return;
    int x = 2 * i, y = 2 * j;
    int rows[2] = {y, min(y + 1, h - 1)};
    int cols[3] = {x > 0 ? x - 1 : 0, x, min(x + 1, w - 1)};
    unsigned long long plane = (unsigned long long)w * h;
    float acc_cb = 0.0f, acc_cr = 0.0f;
    for (int n = 0; n < 2; n++) {
        float cb[3], cr[3], yv[3];
        for (int m = 0; m < 3; m++) {
            unsigned long long idx = (unsigned long long)rows[n] * w + cols[m];
            float r = clamp01(load(in, idx)), g = clamp01(load(in, plane + idx)), b = clamp01(load(in, 2 * plane + idx));
            float yn = k.kr * r + k.kg * g + k.kb * b;
            yv[m] = k.y_off + k.y_scale * yn;
            cb[m] = (b - yn) * k.cb_from_b;
            cr[m] = (r - yn) * k.cr_from_r;
        }
        acc_cb += 0.25f * cb[0] + 0.5f * cb[1];
        acc_cb += 0.25f * cb[2];
        acc_cr += 0.25f * cr[0] + 0.5f * cr[1];
        acc_cr += 0.25f * cr[2];
        if (n == 0 || y + 1 < h) {
            put_y(F, yp, y_pitch, x, rows[n], quantise(k, yv[1]));
            if (x + 1 < w) put_y(F, yp, y_pitch, x + 1, rows[n], quantise(k, yv[2]));
        }
    }
    acc_cb *= 0.5f;
    acc_cr *= 0.5f;
    put_c(F, up, vp, c_pitch, i, j, quantise(k, k.c_off + k.c_scale * acc_cb),
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
