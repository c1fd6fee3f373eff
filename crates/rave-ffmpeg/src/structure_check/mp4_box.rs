//! Reading ISO base media (MP4/MOV) boxes held in memory: a box's children, big-endian
//! numbers.

/// The child box at `at` in `bytes`: its type, its body and where the next one starts.
/// Only 32-bit sizes (what boxes inside `moov`, `moof` and `mfra` use).
pub(super) fn child(bytes: &[u8], at: usize) -> Option<(&[u8], &[u8], usize)> {
    let size = be_u32(bytes.get(at..at + 4)?)? as usize;
    let end = at
        .checked_add(size)
        .filter(|&e| size >= 8 && e <= bytes.len())?;
    Some((&bytes[at + 4..at + 8], &bytes[at + 8..end], end))
}

/// The bodies of the children of type `kind` among the boxes of `bytes`, in order; the walk
/// stops at the first child that does not fit.
pub(super) fn children_of<'a>(
    bytes: &'a [u8],
    kind: &'a [u8; 4],
) -> impl Iterator<Item = &'a [u8]> {
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some((k, body, next)) = child(bytes, at) {
            at = next;
            if k == kind {
                return Some(body);
            }
        }
        None
    })
}

/// The body of the first child of type `kind` among the boxes of `bytes`.
pub(super) fn first_child<'a>(bytes: &'a [u8], kind: &'a [u8; 4]) -> Option<&'a [u8]> {
    children_of(bytes, kind).next()
}

/// A big-endian u32 from exactly four bytes.
pub(super) fn be_u32(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

/// A big-endian unsigned number of up to 8 bytes.
pub(super) fn be_uint(b: &[u8]) -> u64 {
    b.iter().fold(0, |n, &x| (n << 8) | u64::from(x))
}
