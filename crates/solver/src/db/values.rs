//! The values of one whole level in memory, one byte per position, in huge pages where the
//! system gives them.
//!
//! Building a level reads its children's values at random all over the level below and the
//! level itself (hundreds of megabytes each from 22 seeds up, for 6 houses): with 4 KiB pages
//! such reads may also miss the TLB. An anonymous map with `MADV_HUGEPAGE` asked for (Linux's
//! transparent huge pages in `madvise` mode, the common default, give huge pages only to
//! memory that asks; a `Vec` from the allocator never asks) avoids that. Measured on the
//! development machine (AMD EPYC, 2 cores), the effect is within the noise: solving levels
//! 0..=22 took 7.7 to 9.4 s with huge pages and 8.3 to 9.4 s without, three runs each.

use memmap2::MmapMut;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::AtomicI8;

/// An owned array of `i8` values (a level's values, or none).
pub(crate) struct Values {
    /// `None` for an empty array (a map cannot be empty).
    map: Option<MmapMut>,
    len: usize,
}

impl Values {
    /// No values (for a level that is not held in memory).
    pub(crate) fn empty() -> Values {
        Values { map: None, len: 0 }
    }

    /// `len` zero values.
    pub(crate) fn zeroed(len: usize) -> std::io::Result<Values> {
        if len == 0 {
            return Ok(Values::empty());
        }
        let map = MmapMut::map_anon(len)?;
        #[cfg(target_os = "linux")]
        // Advice only: without huge pages the array works the same, a little slower.
        let _ = map.advise(memmap2::Advice::HugePage);
        Ok(Values {
            map: Some(map),
            len,
        })
    }

    /// `len` copies of `v`, written by every core (which also faults the pages in).
    #[cfg(test)]
    pub(crate) fn filled(len: usize, v: i8) -> std::io::Result<Values> {
        use rayon::prelude::*;
        let mut values = Values::zeroed(len)?;
        if v != 0 {
            values.par_chunks_mut(1 << 20).for_each(|c| c.fill(v));
        }
        Ok(values)
    }

    /// A copy of `values`.
    #[cfg(test)]
    pub(crate) fn copy_of(values: &[i8]) -> std::io::Result<Values> {
        let mut copy = Values::zeroed(values.len())?;
        copy.copy_from_slice(values);
        Ok(copy)
    }

    /// The values as atomics, for the threads that compute a level together.
    pub(crate) fn as_atomic(&mut self) -> &[AtomicI8] {
        let s: &mut [i8] = self;
        // SAFETY: `AtomicI8` has the same size, alignment and bit validity as `i8`, and the
        // exclusive borrow of `self` guarantees that nothing else reads or writes the values
        // for as long as the atomic view lives (the same reasoning as the standard library's
        // `AtomicI8::from_mut_slice`).
        unsafe { &*(s as *mut [i8] as *const [AtomicI8]) }
    }
}

impl Deref for Values {
    type Target = [i8];

    fn deref(&self) -> &[i8] {
        match &self.map {
            // SAFETY: `i8` and `u8` have the same size, alignment and every bit pattern is
            // valid for both; the slice covers `len <= map.len()` bytes of the map, which lives
            // as long as the borrow of `self`.
            Some(m) => unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<i8>(), self.len) },
            None => &[],
        }
    }
}

impl DerefMut for Values {
    fn deref_mut(&mut self) -> &mut [i8] {
        match &mut self.map {
            // SAFETY: as in `deref`, with the exclusive borrow of `self` making the slice the
            // only access to the map's bytes.
            Some(m) => unsafe {
                std::slice::from_raw_parts_mut(m.as_mut_ptr().cast::<i8>(), self.len)
            },
            None => &mut [],
        }
    }
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Values({} bytes)", self.len)
    }
}

/// `bytes` as atomics (each byte read as an `i8`), for threads that fill an array together.
pub(crate) fn atomic_bytes(bytes: &mut [u8]) -> &[AtomicI8] {
    // SAFETY: `AtomicI8` has the same size and alignment as `u8`, and every bit pattern is
    // valid for both; the exclusive borrow of `bytes` guarantees that nothing else reads or
    // writes them for as long as the atomic view lives (as for `Values::as_atomic`).
    unsafe { &*(bytes as *mut [u8] as *const [AtomicI8]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn values_hold_what_is_written() {
        assert!(Values::empty().is_empty());
        assert!(Values::zeroed(0).unwrap().is_empty());
        let mut v = Values::filled(5 << 20, -3).unwrap();
        assert_eq!(v.len(), 5 << 20);
        assert!(v.iter().all(|&x| x == -3));
        v[12345] = 7;
        let a = v.as_atomic();
        assert_eq!(a[12345].load(Relaxed), 7);
        a[99].store(-128, Relaxed);
        assert_eq!(v[99], -128);
        assert_eq!(v[100], -3);
        let z = Values::zeroed(1000).unwrap();
        assert!(z.iter().all(|&x| x == 0));
    }
}
