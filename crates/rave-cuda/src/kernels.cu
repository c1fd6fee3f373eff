// RAVE colour-conversion kernels, compiled at start-up by NVRTC (no CUDA headers needed).
// They mirror src/reference.rs operation for operation (compile with --fmad=false), so the
// plain Rust versions are their oracle. Each thread handles two chroma samples and the up to
// 4x2 luma pixels they cover: chroma is read and filtered once, stores are 16/8-byte vectors.
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

// Both chroma components of sample (i, j) as floats (one paired load for NV12/P010 when the
// pitch keeps pairs aligned).
__device__ __forceinline__ void cbcr_at(int F, const unsigned char* u, const unsigned char* v,
                                        unsigned long long pitch, int i, int j, float* cb, float* cr) {
    if ((pitch & 3) != 0) {
        *cb = c_at(F, u, v, pitch, i, j, 0);
        *cr = c_at(F, u, v, pitch, i, j, 1);
    } else if (F == 0) {
        uchar2 q = *(const uchar2*)((u + (unsigned long long)j * pitch) + 2 * i);
        *cb = (float)q.x;
        *cr = (float)q.y;
    } else if (F == 1) {
        ushort2 q = *(const ushort2*)(u + (unsigned long long)j * pitch + 4 * (unsigned long long)i);
        *cb = (float)(q.x >> 6);
        *cr = (float)(q.y >> 6);
    } else {
        *cb = c_at(F, u, v, pitch, i, j, 0);
        *cr = c_at(F, u, v, pitch, i, j, 1);
    }
}

// Four luma samples from column x of a row; one vector load when `vec`.
__device__ __forceinline__ void y4_at(int F, const unsigned char* base, unsigned long long pitch, int x, int row,
                                      float* out, int n, bool vec) {
    const unsigned char* line = base + (unsigned long long)row * pitch;
    if (vec && n == 4) {
        if (F == 0 || F == 2) {
            uchar4 q = *(const uchar4*)(line + x);
            out[0] = (float)q.x; out[1] = (float)q.y; out[2] = (float)q.z; out[3] = (float)q.w;
        } else {
            ushort4 q = *(const ushort4*)(line + 2 * x);
            int sh = F == 1 ? 6 : 0;
            out[0] = (float)(q.x >> sh); out[1] = (float)(q.y >> sh);
            out[2] = (float)(q.z >> sh); out[3] = (float)(q.w >> sh);
        }
        return;
    }
    for (int d = 0; d < 4; d++) out[d] = d < n ? y_at(F, base, pitch, x + d, row) : 0.0f;
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

// Four horizontally adjacent elements; one vector access when `vec` (alignment known).
__device__ __forceinline__ void store4(float* o, unsigned long long i, const float* v, int n, bool vec) {
    if (vec && n == 4) {
        *(float4*)(o + i) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
        for (int q = 0; q < n; q++) o[i + q] = v[q];
    }
}
__device__ __forceinline__ void store4(unsigned short* o, unsigned long long i, const float* v, int n, bool vec) {
    unsigned short hv[4];
    for (int q = 0; q < 4; q++) asm("cvt.rn.f16.f32 %0, %1;" : "=h"(hv[q]) : "f"(v[q]));
    if (vec && n == 4) {
        uint2 packed;
        packed.x = (unsigned int)hv[0] | ((unsigned int)hv[1] << 16);
        packed.y = (unsigned int)hv[2] | ((unsigned int)hv[3] << 16);
        *(uint2*)(o + i) = packed;
    } else {
        for (int q = 0; q < n; q++) o[i + q] = hv[q];
    }
}

// One thread per pair of chroma samples: it converts the (up to) 4x2 luma pixels they cover,
// reading each chroma sample it needs once.
template <int F, typename T>
__device__ void yuv_to_rgb(const unsigned char* __restrict__ yp, unsigned long long y_pitch, const unsigned char* __restrict__ up,
                           const unsigned char* __restrict__ vp, unsigned long long c_pitch, T* __restrict__ out, int w, int h, Coef k) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    int i = 2 * t;
    if (i >= cw || j >= ch) return;
    int cols[3] = {i, min(i + 1, cw - 1), min(i + 2, cw - 1)};
    int rows[3] = {j > 0 ? j - 1 : 0, j, min(j + 1, ch - 1)};
    float c[2][3][3];
#pragma unroll
    for (int r = 0; r < 3; r++)
#pragma unroll
        for (int q = 0; q < 3; q++) cbcr_at(F, up, vp, c_pitch, cols[q], rows[r], &c[0][r][q], &c[1][r][q]);
    unsigned long long plane = (unsigned long long)w * h;
    bool vec = (w & 3) == 0;
    bool vec_y = vec && (y_pitch & 7) == 0;
    int x0 = 2 * i;
    int n = min(4, w - x0);
#pragma unroll
    for (int dy = 0; dy < 2; dy++) {
        int y = 2 * j + dy;
        if (y >= h) break;
        // Chroma rows and weight exactly as reference.rs picks them for this luma row.
        int ra = dy == 0 ? 0 : 1, rb = dy == 0 ? 1 : 2;
        float fy = dy == 0 ? (j == 0 ? 1.0f : 0.75f) : 0.25f;
        float yv[4];
        y4_at(F, yp, y_pitch, x0, y, yv, n, vec_y);
        float px[3][4];
#pragma unroll
        for (int dx = 0; dx < 4; dx++) {
            // Even columns sit on their chroma column; odd ones average it with the next.
            int a = dx / 2, b2 = dx / 2 + (dx & 1);
            float cc[2];
#pragma unroll
            for (int comp = 0; comp < 2; comp++) {
                float top = 0.5f * (c[comp][ra][a] + c[comp][ra][b2]);
                float bottom = 0.5f * (c[comp][rb][a] + c[comp][rb][b2]);
                cc[comp] = top + fy * (bottom - top);
            }
            float yn = (yv[dx] - k.y_off) * k.inv_y_scale;
            float cbn = (cc[0] - k.c_off) * k.inv_c_scale;
            float crn = (cc[1] - k.c_off) * k.inv_c_scale;
            float r = yn + k.cr_to_r * crn;
            float b = yn + k.cb_to_b * cbn;
            float g = (yn - k.kr * r - k.kb * b) * k.inv_kg;
            px[0][dx] = clamp01(r);
            px[1][dx] = clamp01(g);
            px[2][dx] = clamp01(b);
        }
        unsigned long long idx = (unsigned long long)y * w + x0;
#pragma unroll
        for (int p = 0; p < 3; p++) store4(out, p * plane + idx, px[p], n, vec);
    }
}

// Four adjacent elements at i (aligned when `vec`) as floats.
__device__ __forceinline__ void load4(const float* p, unsigned long long i, float* v, bool vec) {
    if (vec) {
        float4 q = *(const float4*)(p + i);
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        for (int n = 0; n < 4; n++) v[n] = p[i + n];
    }
}
__device__ __forceinline__ void load4(const unsigned short* p, unsigned long long i, float* v, bool vec) {
    unsigned short hv[4];
    if (vec) {
        uint2 q = *(const uint2*)(p + i);
        hv[0] = (unsigned short)(q.x & 0xffff); hv[1] = (unsigned short)(q.x >> 16);
        hv[2] = (unsigned short)(q.y & 0xffff); hv[3] = (unsigned short)(q.y >> 16);
    } else {
        for (int n = 0; n < 4; n++) hv[n] = p[i + n];
    }
    for (int n = 0; n < 4; n++) asm("cvt.f32.f16 %0, %1;" : "=f"(v[n]) : "h"(hv[n]));
}

// Four luma codes at column x of a row; one vector store when `vec`.
__device__ __forceinline__ void put_y4(int F, unsigned char* base, unsigned long long pitch, int x, int row,
                                       const unsigned short* code, int n, bool vec) {
    unsigned char* line = base + (unsigned long long)row * pitch;
    if (vec && n == 4) {
        if (F == 0 || F == 2) {
            *(unsigned int*)(line + x) = (unsigned int)code[0] | ((unsigned int)code[1] << 8) |
                                         ((unsigned int)code[2] << 16) | ((unsigned int)code[3] << 24);
        } else {
            int sh = F == 1 ? 6 : 0;
            uint2 q;
            q.x = (unsigned int)(unsigned short)(code[0] << sh) | ((unsigned int)(unsigned short)(code[1] << sh) << 16);
            q.y = (unsigned int)(unsigned short)(code[2] << sh) | ((unsigned int)(unsigned short)(code[3] << sh) << 16);
            *(uint2*)(line + 2 * x) = q;
        }
        return;
    }
    for (int q = 0; q < n; q++) put_y(F, base, pitch, x + q, row, code[q]);
}

// One thread per pair of chroma samples: the luma of its (up to) 4x2 pixels and both
// filtered chroma samples.
template <typename T, int F>
__device__ void rgb_to_yuv(const T* __restrict__ in, int w, int h, unsigned char* yp, unsigned long long y_pitch,
                           unsigned char* up, unsigned char* vp, unsigned long long c_pitch, Coef k) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int cw = (w + 1) / 2, ch = (h + 1) / 2;
    int i = 2 * t;
    if (i >= cw || j >= ch) return;
    int x = 2 * i, y = 2 * j;
    int rows[2] = {y, min(y + 1, h - 1)};
    // Luma columns x-1 .. x+3, clamped: chroma i uses 0,1,2 and chroma i+1 uses 2,3,4.
    int cols[5];
#pragma unroll
    for (int q = 0; q < 5; q++) cols[q] = min(max(x - 1 + q, 0), w - 1);
    bool second = i + 1 < cw;
    unsigned long long plane = (unsigned long long)w * h;
    // Columns x..x+3 are one aligned vector when the row holds all four and w % 4 == 0.
    bool vec_in = (w & 3) == 0 && x + 3 < w;
    bool vec_y = vec_in && (y_pitch & 7) == 0;
    int n = min(4, w - x);
    float acc_cb[2] = {0.0f, 0.0f}, acc_cr[2] = {0.0f, 0.0f};
#pragma unroll
    for (int nrow = 0; nrow < 2; nrow++) {
        float ch_r[5], ch_g[5], ch_b[5];
        unsigned long long row_base = (unsigned long long)rows[nrow] * w;
        unsigned long long left = row_base + cols[0];
        ch_r[0] = load(in, left);
        ch_g[0] = load(in, plane + left);
        ch_b[0] = load(in, 2 * plane + left);
        if (vec_in) {
            load4(in, row_base + x, ch_r + 1, true);
            load4(in, plane + row_base + x, ch_g + 1, true);
            load4(in, 2 * plane + row_base + x, ch_b + 1, true);
        } else {
#pragma unroll
            for (int m = 1; m < 5; m++) {
                unsigned long long idx = row_base + cols[m];
                ch_r[m] = load(in, idx);
                ch_g[m] = load(in, plane + idx);
                ch_b[m] = load(in, 2 * plane + idx);
            }
        }
        float cb[5], cr[5];
        unsigned short yc[4];
#pragma unroll
        for (int m = 0; m < 5; m++) {
            float r = clamp01(ch_r[m]), g = clamp01(ch_g[m]), b = clamp01(ch_b[m]);
            float yn = k.kr * r + k.kg * g + k.kb * b;
            if (m > 0) yc[m - 1] = quantise(k, k.y_off + k.y_scale * yn);
            cb[m] = (b - yn) * k.cb_from_b;
            cr[m] = (r - yn) * k.cr_from_r;
        }
#pragma unroll
        for (int s = 0; s < 2; s++) {
            acc_cb[s] += 0.25f * cb[2 * s] + 0.5f * cb[2 * s + 1];
            acc_cb[s] += 0.25f * cb[2 * s + 2];
            acc_cr[s] += 0.25f * cr[2 * s] + 0.5f * cr[2 * s + 1];
            acc_cr[s] += 0.25f * cr[2 * s + 2];
        }
        if (nrow == 0 || y + 1 < h) put_y4(F, yp, y_pitch, x, rows[nrow], yc, n, vec_y);
    }
#pragma unroll
    for (int s = 0; s < 2; s++) {
        if (s == 1 && !second) break;
        put_c(F, up, vp, c_pitch, i + s, j, quantise(k, k.c_off + k.c_scale * (acc_cb[s] * 0.5f)),
              quantise(k, k.c_off + k.c_scale * (acc_cr[s] * 0.5f)));
    }
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
