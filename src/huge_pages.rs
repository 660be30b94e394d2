//! Scratch buffers backed by transparent huge pages where the OS offers them.
//!
//! The compressed-domain products look rows up at random in tables of several MB. With
//! 4 KB pages nearly every lookup also misses the TLB: at the paper's shape a lookup of
//! a 64-byte table row cost 2.6 ns with 4 KB pages and 1.2 ns with 2 MB pages
//! (single thread, random codes). Linux backs an anonymous mapping with 2 MB pages when
//! asked by `madvise(MADV_HUGEPAGE)` before its pages are touched (THP in its default
//! "madvise" mode). Heap memory may have been touched already (the allocator reuses
//! it), so the buffer is a fresh mapping aligned to 2 MB; elsewhere, or when the
//! mapping is refused, it is an ordinary vector.

use std::ops::{Deref, DerefMut};

/// A vector of `len` copies of `value` whose memory is advised for huge pages before it
/// is written. Large vectors (beyond the allocator's mmap threshold, at most 32 MB for
/// glibc) are fresh mappings and get them; smaller ones may reuse heap memory and keep
/// ordinary pages. For outputs handed on as vectors (to NumPy without a copy): writing
/// them faults in a few huge pages instead of thousands of small ones.
pub(crate) fn advised_vec<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    #[cfg(target_os = "linux")]
    if let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()).filter(|&b| b >= HUGE_PAGE) {
        advise_huge_pages(v.as_mut_ptr().cast(), bytes);
    }
    v.resize(len, value);
    v
}

/// `len` values in one piece of memory, on huge pages where possible.
pub(crate) struct HugeBuffer<T: Copy> {
    storage: Storage<T>,
}

enum Storage<T> {
    #[cfg(target_os = "linux")]
    Mapped {
        map: *mut libc::c_void,
        map_len: usize,
        data: *mut T,
        len: usize,
    },
    Heap(Vec<T>),
}

// SAFETY: a mapped buffer owns its memory exclusively, like a Vec<T>.
unsafe impl<T: Copy + Send> Send for HugeBuffer<T> {}
// SAFETY: shared access only reads, like &Vec<T>.
unsafe impl<T: Copy + Sync> Sync for HugeBuffer<T> {}

#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// Asks for huge pages on the whole 4 KB pages of [start, start + bytes), memory this
/// process owns and has not written yet.
#[cfg(target_os = "linux")]
fn advise_huge_pages(start: *mut u8, bytes: usize) {
    const PAGE: usize = 4096;
    let (begin, end) = ((start as usize).next_multiple_of(PAGE), (start as usize + bytes) / PAGE * PAGE);
    if end > begin {
        // SAFETY: [begin, end) lies inside the caller's allocation. MADV_HUGEPAGE changes
        // only how its pages will be backed, never their contents; a refusal (THP
        // disabled) leaves ordinary pages, so the result is ignored.
        unsafe { libc::madvise(begin as *mut libc::c_void, end - begin, libc::MADV_HUGEPAGE) };
    }
}

impl<T: Copy> HugeBuffer<T> {
    /// `len` copies of `value`.
    pub(crate) fn filled(len: usize, value: T) -> Self {
        #[cfg(target_os = "linux")]
        if let Some(storage) = Self::mapped(len, value) {
            return Self { storage };
        }
        Self { storage: Storage::Heap(vec![value; len]) }
    }

    /// A fresh anonymous mapping with a 2 MB-aligned start, advised for huge pages and
    /// then filled; None for small buffers or when the kernel refuses the mapping.
    #[cfg(target_os = "linux")]
    fn mapped(len: usize, value: T) -> Option<Storage<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        if bytes < HUGE_PAGE || std::mem::align_of::<T>() > HUGE_PAGE {
            return None;
        }
        let map_len = bytes.checked_add(HUGE_PAGE)?;
        // SAFETY: an anonymous private mapping at an address the kernel chooses; it
        // aliases nothing and is unmapped in Drop with the same length.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let offset = (map as usize).next_multiple_of(HUGE_PAGE) - map as usize;
        // SAFETY: offset + bytes <= map_len, so the data lies inside the mapping; the
        // start is 2 MB-aligned, hence aligned for T.
        let data = unsafe { map.cast::<u8>().add(offset).cast::<T>() };
        advise_huge_pages(data.cast(), bytes);
        for i in 0..len {
            // SAFETY: i < len, inside the mapping; writes initialise every element.
            unsafe { data.add(i).write(value) };
        }
        Some(Storage::Mapped { map, map_len, data, len })
    }
}

impl<T: Copy> Deref for HugeBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.storage {
            // SAFETY: `data` points to `len` initialised values owned by this buffer.
            #[cfg(target_os = "linux")]
            Storage::Mapped { data, len, .. } => unsafe { std::slice::from_raw_parts(*data, *len) },
            Storage::Heap(v) => v,
        }
    }
}

impl<T: Copy> DerefMut for HugeBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match &mut self.storage {
            // SAFETY: as in deref, and &mut self makes the access exclusive.
            #[cfg(target_os = "linux")]
            Storage::Mapped { data, len, .. } => unsafe { std::slice::from_raw_parts_mut(*data, *len) },
            Storage::Heap(v) => v,
        }
    }
}

impl<T: Copy> Drop for HugeBuffer<T> {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Storage::Mapped { map, map_len, .. } = self.storage {
            // SAFETY: the mapping made in `mapped`, unmapped once; T is Copy (no drop).
            unsafe { libc::munmap(map, map_len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::HugeBuffer;

    /// Advised vectors are ordinary vectors.
    #[test]
    fn advised_vectors_hold_their_values() {
        for len in [0, 3, (3 << 20) + 5] {
            let v = super::advised_vec(len, 5u32);
            assert!(v.len() == len && v.iter().all(|&x| x == 5));
        }
    }

    /// The buffer holds what was asked for, small (heap) or large (mapped), and can be
    /// written.
    #[test]
    fn buffers_hold_their_values() {
        for len in [0, 3, (3 << 20) + 5] {
            let mut v = HugeBuffer::filled(len, 7u16);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == 7));
            if let Some(last) = v.last_mut() {
                *last = 9;
                assert_eq!(v[len - 1], 9);
            }
        }
    }
}
