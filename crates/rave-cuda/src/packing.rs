//! Device surface layouts (NV12, P010, planar 8- and 16-bit 4:2:0) as host byte buffers, and
//! their exact conversion to and from `YuvFrame`: the reference side of the GPU kernel tests.

use rave_core::frame::{YuvFrame, chroma_size};

/// How a 4:2:0 frame is laid out in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum YuvLayout {
    /// 8-bit Y plane, then interleaved UV.
    Nv12,
    /// 16-bit samples with 10 significant bits in the high bits; Y then interleaved UV.
    P010,
    /// 8-bit Y, U, V planes (FFmpeg yuv420p).
    Yuv420p8,
    /// 16-bit little-endian Y, U, V planes with 10 bits in the low bits (yuv420p10le).
    Yuv420p16,
}

impl YuvLayout {
    /// Bytes per sample.
    pub fn sample_bytes(self) -> usize {
        match self {
            YuvLayout::Nv12 | YuvLayout::Yuv420p8 => 1,
            YuvLayout::P010 | YuvLayout::Yuv420p16 => 2,
        }
    }

    /// Significant bits per sample.
    pub fn bit_depth(self) -> u8 {
        match self {
            YuvLayout::Nv12 | YuvLayout::Yuv420p8 => 8,
            YuvLayout::P010 | YuvLayout::Yuv420p16 => 10,
        }
    }

    /// Whether U and V are interleaved in one plane.
    pub fn interleaved(self) -> bool {
        matches!(self, YuvLayout::Nv12 | YuvLayout::P010)
    }

    /// Index used by the kernels (must match `kernels.cu`).
    pub fn kernel_id(self) -> u32 {
        match self {
            YuvLayout::Nv12 => 0,
            YuvLayout::P010 => 1,
            YuvLayout::Yuv420p8 => 2,
            YuvLayout::Yuv420p16 => 3,
        }
    }
}

/// Byte offsets and pitches of a frame's planes within one buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlaneLayout {
    /// Which layout.
    pub layout: YuvLayout,
    /// Luma width.
    pub width: u32,
    /// Luma height.
    pub height: u32,
    /// Bytes per luma row.
    pub y_pitch: usize,
    /// Bytes per chroma row (of the UV plane, or of each of U and V).
    pub c_pitch: usize,
    /// Offset of U (or UV).
    pub u_offset: usize,
    /// Offset of V (equal to `u_offset` when interleaved).
    pub v_offset: usize,
    /// Total bytes.
    pub bytes: usize,
}

impl PlaneLayout {
    /// Planes packed one after another, each row padded to `align` bytes (pitched surfaces).
    pub fn new(layout: YuvLayout, width: u32, height: u32, align: usize) -> Self {
        let (cw, ch) = chroma_size(width, height);
        let sb = layout.sample_bytes();
        let round = |n: usize| n.div_ceil(align) * align;
        let y_pitch = round(width as usize * sb);
        let c_pitch = if layout.interleaved() {
            round(2 * cw * sb)
        } else {
            round(cw * sb)
        };
        let u_offset = y_pitch * height as usize;
        let v_offset = if layout.interleaved() {
            u_offset
        } else {
            u_offset + c_pitch * ch
        };
        let bytes = if layout.interleaved() {
            u_offset + c_pitch * ch
        } else {
            v_offset + c_pitch * ch
        };
        Self {
            layout,
            width,
            height,
            y_pitch,
            c_pitch,
            u_offset,
            v_offset,
            bytes,
        }
    }
}

fn put(buf: &mut [u8], at: usize, sb: usize, value: u16) {
    if sb == 1 {
        buf[at] = value as u8;
    } else {
        buf[at..at + 2].copy_from_slice(&value.to_le_bytes());
    }
}

fn get(buf: &[u8], at: usize, sb: usize) -> u16 {
    if sb == 1 {
        u16::from(buf[at])
    } else {
        u16::from_le_bytes([buf[at], buf[at + 1]])
    }
}

/// Which plane of a `YuvFrame` a sample belongs to.
#[derive(Debug, Clone, Copy)]
enum Plane {
    Y,
    U,
    V,
}

fn plane(frame: &YuvFrame, p: Plane) -> &[u16] {
    match p {
        Plane::Y => &frame.y,
        Plane::U => &frame.u,
        Plane::V => &frame.v,
    }
}

fn plane_mut(frame: &mut YuvFrame, p: Plane) -> &mut [u16] {
    match p {
        Plane::Y => &mut frame.y,
        Plane::U => &mut frame.u,
        Plane::V => &mut frame.v,
    }
}

/// Visit every sample: its plane, its index in that plane, and its byte offset in `layout`.
fn for_each_sample(layout: &PlaneLayout, mut visit: impl FnMut(Plane, usize, usize)) {
    let sb = layout.layout.sample_bytes();
    let (w, h) = (layout.width as usize, layout.height as usize);
    let (cw, ch) = chroma_size(layout.width, layout.height);
    for y in 0..h {
        for x in 0..w {
            visit(Plane::Y, y * w + x, y * layout.y_pitch + x * sb);
        }
    }
    for j in 0..ch {
        for i in 0..cw {
            let idx = j * cw + i;
            if layout.layout.interleaved() {
                let at = layout.u_offset + j * layout.c_pitch + 2 * i * sb;
                visit(Plane::U, idx, at);
                visit(Plane::V, idx, at + sb);
            } else {
                visit(Plane::U, idx, layout.u_offset + j * layout.c_pitch + i * sb);
                visit(Plane::V, idx, layout.v_offset + j * layout.c_pitch + i * sb);
            }
        }
    }
}

/// P010 keeps its 10 bits in the high bits of each 16-bit sample.
fn shift(layout: YuvLayout) -> u32 {
    if layout == YuvLayout::P010 { 6 } else { 0 }
}

/// Each plane of a planar layout: (plane, byte offset, pitch, width, rows).
fn planes(layout: &PlaneLayout) -> [(Plane, usize, usize, usize, usize); 3] {
    let (cw, ch) = chroma_size(layout.width, layout.height);
    let (w, h) = (layout.width as usize, layout.height as usize);
    [
        (Plane::Y, 0, layout.y_pitch, w, h),
        (Plane::U, layout.u_offset, layout.c_pitch, cw, ch),
        (Plane::V, layout.v_offset, layout.c_pitch, cw, ch),
    ]
}

/// Planar 8- and 16-bit layouts, whole rows at a time (the GPU path's per-frame hot loop).
fn pack_planar(frame: &YuvFrame, layout: &PlaneLayout, buf: &mut [u8]) {
    let sb = layout.layout.sample_bytes();
    for (p, offset, pitch, width, rows) in planes(layout) {
        let src = plane(frame, p);
        for r in 0..rows {
            let dst = &mut buf[offset + r * pitch..][..width * sb];
            let row = &src[r * width..][..width];
            if sb == 1 {
                dst.iter_mut().zip(row).for_each(|(d, s)| *d = *s as u8);
            } else {
                dst.chunks_exact_mut(2)
                    .zip(row)
                    .for_each(|(d, s)| d.copy_from_slice(&s.to_le_bytes()));
            }
        }
    }
}

/// Samples below which a frame is unpacked on the calling thread alone.
const PARALLEL_SAMPLES: usize = 1 << 20;

/// Threads that unpack one frame of `samples` samples (a 4K frame is about 12 million:
/// one thread takes several milliseconds, the download stage's whole budget at 120 fps).
fn unpack_threads(samples: usize) -> usize {
    if samples < PARALLEL_SAMPLES {
        return 1;
    }
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(8)))
}

/// Rows `first ..` of one plane of `buf` (`pitch` bytes apart from `offset`) into `dst`,
/// `width` samples a row.
fn unpack_rows(
    buf: &[u8],
    (offset, pitch, sb): (usize, usize, usize),
    width: usize,
    first: usize,
    dst: &mut [u16],
) {
    for (r, row) in dst.chunks_exact_mut(width).enumerate() {
        let src = &buf[offset + (first + r) * pitch..][..width * sb];
        if sb == 1 {
            row.iter_mut()
                .zip(src)
                .for_each(|(d, s)| *d = u16::from(*s));
        } else {
            row.iter_mut()
                .zip(src.chunks_exact(2))
                .for_each(|(d, s)| *d = u16::from_le_bytes([s[0], s[1]]));
        }
    }
}

/// Planar 8- and 16-bit layouts, whole rows at a time, large frames in bands of rows on
/// several threads (the GPU path's per-frame hot loop before the software encoder).
fn unpack_planar(buf: &[u8], layout: &PlaneLayout, frame: &mut YuvFrame) {
    let sb = layout.layout.sample_bytes();
    let threads = unpack_threads(frame.y.len() + 2 * frame.u.len());
    let targets = [&mut frame.y, &mut frame.u, &mut frame.v];
    std::thread::scope(|scope| {
        for ((_, offset, pitch, width, rows), dst) in planes(layout).into_iter().zip(targets) {
            if width == 0 || rows == 0 {
                continue;
            }
            let band = rows.div_ceil(threads);
            for (i, chunk) in dst[..rows * width].chunks_mut(band * width).enumerate() {
                let geometry = (offset, pitch, sb);
                if threads == 1 {
                    unpack_rows(buf, geometry, width, i * band, chunk);
                } else {
                    scope.spawn(move || unpack_rows(buf, geometry, width, i * band, chunk));
                }
            }
        }
    });
}

/// Lay `frame` out as `layout` (its bit depth must match the layout's).
pub fn pack(frame: &YuvFrame, layout: &PlaneLayout) -> Vec<u8> {
    assert_eq!(frame.bit_depth, layout.layout.bit_depth(), "bit depth");
    let mut buf = vec![0u8; layout.bytes];
    if !layout.layout.interleaved() && shift(layout.layout) == 0 {
        pack_planar(frame, layout, &mut buf);
        return buf;
    }
    let (sb, sh) = (layout.layout.sample_bytes(), shift(layout.layout));
    for_each_sample(layout, |p, idx, at| {
        put(&mut buf, at, sb, plane(frame, p)[idx] << sh)
    });
    buf
}

/// Read a frame laid out as `layout`.
pub fn unpack(buf: &[u8], layout: &PlaneLayout) -> YuvFrame {
    let mut frame = YuvFrame::zeroed(layout.width, layout.height, layout.layout.bit_depth());
    if !layout.layout.interleaved() && shift(layout.layout) == 0 {
        unpack_planar(buf, layout, &mut frame);
        return frame;
    }
    let (sb, sh) = (layout.layout.sample_bytes(), shift(layout.layout));
    for_each_sample(layout, |p, idx, at| {
        plane_mut(&mut frame, p)[idx] = get(buf, at, sb) >> sh
    });
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `width` x `height` frame at `layout`'s depth with every sample set from `step`.
    fn patterned(layout: YuvLayout, width: u32, height: u32, step: u32) -> YuvFrame {
        let depth = layout.bit_depth();
        let mut f = YuvFrame::zeroed(width, height, depth);
        let max = (1u32 << depth) - 1;
        for (i, v) in
            f.y.iter_mut()
                .chain(f.u.iter_mut())
                .chain(f.v.iter_mut())
                .enumerate()
        {
            *v = ((i as u32 * step + 7) % (max + 1)) as u16;
        }
        f
    }

    #[test]
    fn pack_unpack_round_trips_every_layout_with_pitch_and_odd_sizes() {
        for layout in [
            YuvLayout::Nv12,
            YuvLayout::P010,
            YuvLayout::Yuv420p8,
            YuvLayout::Yuv420p16,
        ] {
            let f = patterned(layout, 7, 5, 97);
            let pl = PlaneLayout::new(layout, 7, 5, 64);
            assert_eq!(pl.y_pitch % 64, 0);
            assert_eq!(unpack(&pack(&f, &pl), &pl), f, "{layout:?}");
        }
        let pl = PlaneLayout::new(YuvLayout::P010, 4, 2, 1);
        let mut f = YuvFrame::zeroed(4, 2, 10);
        f.y[0] = 1023;
        assert_eq!(
            &pack(&f, &pl)[..2],
            &(1023u16 << 6).to_le_bytes(),
            "P010 keeps 10 bits high"
        );
    }

    #[test]
    fn large_frames_unpack_in_bands_on_several_threads_like_small_ones() {
        // Above PARALLEL_SAMPLES, with rows that do not divide into the bands evenly and
        // odd chroma sizes.
        for layout in [YuvLayout::Yuv420p8, YuvLayout::Yuv420p16] {
            let (w, h) = (1283, 1027);
            let f = patterned(layout, w, h, 89);
            assert!(f.y.len() + 2 * f.u.len() >= PARALLEL_SAMPLES);
            let pl = PlaneLayout::new(layout, w, h, 64);
            assert_eq!(unpack(&pack(&f, &pl), &pl), f, "{layout:?}");
        }
    }

    #[test]
    fn planar_fast_path_matches_the_sample_walker() {
        for layout in [YuvLayout::Yuv420p8, YuvLayout::Yuv420p16] {
            let f = patterned(layout, 9, 7, 131);
            let pl = PlaneLayout::new(layout, 9, 7, 32);
            let mut walked = vec![0u8; pl.bytes];
            let sb = layout.sample_bytes();
            for_each_sample(&pl, |p, idx, at| {
                put(&mut walked, at, sb, plane(&f, p)[idx])
            });
            let fast = pack(&f, &pl);
            for (p, offset, pitch, width, rows) in planes(&pl) {
                for r in 0..rows {
                    let span = offset + r * pitch..offset + r * pitch + width * sb;
                    assert_eq!(fast[span.clone()], walked[span], "{layout:?} {p:?} row {r}");
                }
            }
            assert_eq!(unpack(&walked, &pl), f, "{layout:?}");
        }
    }
}
