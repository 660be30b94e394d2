//! An LRU cache of kernel columns under a byte budget (LIBSVM's `cache_size`, in MB).
//!
//! Layout: a slab of column buffers (slots, allocated on first use and then reused),
//! `slot_of[i]` mapping column i to its slot, and an intrusive doubly-linked list over
//! the slots in recency order (head = most recently used). Lookup, hit promotion and
//! eviction are O(1); a hit never allocates. A miss computes the column with
//! [`KernelSource::columns_into`] (parallel for [`super::DataKernel`]) straight into
//! the evicted slot.
//!
//! Columns are stored as `f64` or, like LIBSVM's `Qfloat`, as `f32` ([`Stored`]): half
//! the memory, so twice the columns under a budget, and half the bytes for a solver
//! whose steps wait on reading columns from main memory. Kernel values are always
//! computed in `f64`; an `f32` cache holds them rounded, which is exactly the problem
//! with K rounded entrywise (relative change ≤ 2⁻²⁴), as long as the solver reads K
//! only from the cache (its diagonal included, see [`Stored::rounded`]).

use super::KernelSource;
use crate::{Error, Result};

const NONE: u32 = u32::MAX;
/// Marks a column chosen for loading during `prefetch`.
const PENDING: u32 = u32::MAX - 1;

/// How a column is held: `f64`, or `f32` (rounded to nearest).
pub trait Stored: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// A kernel value as stored.
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// `v` as the cache holds it: for a solver that takes K's diagonal from
    /// [`KernelSource::diag`] rather than from a column.
    fn rounded(v: f64) -> f64 {
        Self::from_f64(v).to_f64()
    }
    /// Column i of `source` into `out`, through `staging` unless `Self` is `f64`.
    fn compute<S: KernelSource + ?Sized>(source: &S, i: usize, out: &mut [Self], staging: &mut Vec<f64>) {
        staging.resize(out.len(), 0.0);
        source.columns_into(std::slice::from_ref(&i), staging);
        out.iter_mut().zip(staging.iter()).for_each(|(o, &v)| *o = Self::from_f64(v));
    }
}

impl Stored for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn compute<S: KernelSource + ?Sized>(source: &S, i: usize, out: &mut [f64], _: &mut Vec<f64>) {
        source.columns_into(std::slice::from_ref(&i), out);
    }
}

impl Stored for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

/// LRU cache of the columns of an n × n kernel matrix, held as `T`.
#[derive(Debug, Clone)]
pub struct ColumnCache<T: Stored = f64> {
    n: usize,
    capacity: usize,
    cols: Vec<Box<[T]>>,
    slot_of: Vec<u32>,
    col_of: Vec<u32>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    hits: u64,
    misses: u64,
    staging: Vec<f64>,
    pending: Vec<usize>,
}

impl ColumnCache {
    /// scikit-learn's default `cache_size` (MB).
    pub const DEFAULT_SIZE_MB: f64 = 200.0;
}

impl<T: Stored> ColumnCache<T> {
    /// A cache of ⌊cache_size_mb · 2²⁰ / (n · size of T)⌋ columns of n values, but at
    /// least 2 (the pair solvers need two columns at once) and at most n. Memory is
    /// allocated as columns are first stored.
    pub fn new(n: usize, cache_size_mb: f64) -> Result<Self> {
        if !(cache_size_mb > 0.0 && cache_size_mb.is_finite()) {
            return Err(Error::param("cache_size", format!("must be finite and > 0 (MB), got {cache_size_mb}")));
        }
        let column_bytes = (std::mem::size_of::<T>() * n.max(1)) as f64;
        let columns = (cache_size_mb * (1u64 << 20) as f64 / column_bytes).floor();
        // Saturating float-to-int conversion: huge budgets just mean "all columns".
        Self::with_columns(n, (columns as usize).max(2))
    }

    /// A cache of exactly `min(columns, n)` columns (`columns ≥ 2`, or n = 1).
    pub fn with_columns(n: usize, columns: usize) -> Result<Self> {
        if n == 0 || n >= PENDING as usize {
            return Err(Error::input("X", format!("kernel cache: number of examples {n} out of range")));
        }
        let capacity = columns.min(n);
        if capacity < 2.min(n) {
            return Err(Error::param("cache_size", "the kernel cache must hold at least 2 columns"));
        }
        Ok(Self {
            n,
            capacity,
            cols: Vec::new(),
            slot_of: vec![NONE; n],
            col_of: Vec::new(),
            prev: Vec::new(),
            next: Vec::new(),
            head: NONE,
            tail: NONE,
            hits: 0,
            misses: 0,
            staging: Vec::new(),
            pending: Vec::new(),
        })
    }

    /// Column length n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Most columns held at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Columns currently held.
    pub fn len(&self) -> usize {
        self.cols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cols.is_empty()
    }

    /// Lookups answered from the cache (`get`, `get_pair`, `prefetch`).
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Columns computed.
    pub fn misses(&self) -> u64 {
        self.misses
    }

    pub fn reset_stats(&mut self) {
        self.hits = 0;
        self.misses = 0;
    }

    pub fn contains(&self, i: usize) -> bool {
        self.slot_of[i] < PENDING
    }

    /// Column i if cached, without counting or changing the recency order (usable
    /// through `&self`, e.g. from a parallel pass).
    pub fn peek(&self, i: usize) -> Option<&[T]> {
        let s = self.slot_of[i];
        (s < PENDING).then(|| &*self.cols[s as usize])
    }

    /// Column i of `source`'s matrix, from the cache or computed (evicting the least
    /// recently used column when full). `source` must be the matrix the cache was
    /// filled from.
    pub fn get<S: KernelSource + ?Sized>(&mut self, i: usize, source: &S) -> &[T] {
        let s = self.slot(i, source);
        &self.cols[s]
    }

    /// Columns i and j at once (both stay cached: the capacity is at least 2).
    pub fn get_pair<S: KernelSource + ?Sized>(&mut self, i: usize, j: usize, source: &S) -> (&[T], &[T]) {
        let si = self.slot(i, source);
        let sj = self.slot(j, source);
        (&self.cols[si], &self.cols[sj])
    }

    /// Makes the columns `idx` resident, computing the missing ones in one
    /// [`KernelSource::columns_into`] call (blocked and parallel). Cached columns of
    /// `idx` are promoted and never evicted by this call; when more are missing than
    /// fit, the first ones in `idx` are loaded. Returns the number of columns computed.
    pub fn prefetch<S: KernelSource + ?Sized>(&mut self, idx: &[usize], source: &S) -> usize {
        debug_assert_eq!(source.n(), self.n, "cache and kernel sizes differ");
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        let mut kept = 0;
        for &i in idx {
            match self.slot_of[i] {
                NONE => {
                    self.slot_of[i] = PENDING;
                    pending.push(i);
                }
                PENDING => {}
                s => {
                    self.hits += 1;
                    kept += 1;
                    self.touch(s as usize);
                }
            }
        }
        let room = self.capacity.saturating_sub(kept).min(pending.len());
        pending[room..].iter().for_each(|&i| self.slot_of[i] = NONE);
        pending.truncate(room);
        if !pending.is_empty() {
            let n = self.n;
            self.staging.resize(pending.len() * n, 0.0);
            source.columns_into(&pending, &mut self.staging);
            for (b, &i) in pending.iter().enumerate() {
                let s = self.acquire_slot();
                let column = &self.staging[b * n..(b + 1) * n];
                self.cols[s].iter_mut().zip(column).for_each(|(o, &v)| *o = T::from_f64(v));
                self.assign(i, s);
            }
            self.misses += pending.len() as u64;
        }
        let loaded = pending.len();
        self.pending = pending;
        loaded
    }

    /// Drops every column (and frees their memory); keeps the counters.
    pub fn clear(&mut self) {
        for &c in &self.col_of {
            self.slot_of[c as usize] = NONE;
        }
        self.cols = Vec::new();
        self.col_of.clear();
        self.prev.clear();
        self.next.clear();
        self.head = NONE;
        self.tail = NONE;
    }

    /// The slot holding column i after a hit (promoted) or a miss (computed).
    fn slot<S: KernelSource + ?Sized>(&mut self, i: usize, source: &S) -> usize {
        debug_assert_eq!(source.n(), self.n, "cache and kernel sizes differ");
        let s = self.slot_of[i];
        if s < PENDING {
            self.hits += 1;
            self.touch(s as usize);
            return s as usize;
        }
        self.misses += 1;
        let s = self.acquire_slot();
        T::compute(source, i, &mut self.cols[s], &mut self.staging);
        self.assign(i, s);
        s
    }

    /// A slot to fill, detached from the list and unmapped: a new one while below
    /// capacity, else the least recently used.
    fn acquire_slot(&mut self) -> usize {
        if self.cols.len() < self.capacity {
            self.cols.push(vec![T::default(); self.n].into_boxed_slice());
            self.col_of.push(NONE);
            self.prev.push(NONE);
            self.next.push(NONE);
            return self.cols.len() - 1;
        }
        let s = self.tail as usize;
        self.unlink(s);
        self.slot_of[self.col_of[s] as usize] = NONE;
        self.col_of[s] = NONE;
        s
    }

    /// Maps column i to slot s and makes it the most recently used.
    fn assign(&mut self, i: usize, s: usize) {
        self.slot_of[i] = s as u32;
        self.col_of[s] = i as u32;
        self.push_front(s);
    }

    fn touch(&mut self, s: usize) {
        if self.head != s as u32 {
            self.unlink(s);
            self.push_front(s);
        }
    }

    fn unlink(&mut self, s: usize) {
        let (p, nx) = (self.prev[s], self.next[s]);
        if p == NONE {
            self.head = nx;
        } else {
            self.next[p as usize] = nx;
        }
        if nx == NONE {
            self.tail = p;
        } else {
            self.prev[nx as usize] = p;
        }
    }

    fn push_front(&mut self, s: usize) {
        self.prev[s] = NONE;
        self.next[s] = self.head;
        if self.head == NONE {
            self.tail = s as u32;
        } else {
            self.prev[self.head as usize] = s as u32;
        }
        self.head = s as u32;
    }

    /// Columns from most to least recently used (tests and debugging).
    pub fn recency_order(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.cols.len());
        let mut s = self.head;
        while s != NONE {
            out.push(self.col_of[s as usize] as usize);
            s = self.next[s as usize];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// K(j, i) = 1000 i + j; counts computed columns.
    struct Fake {
        n: usize,
        computed: AtomicUsize,
    }

    impl KernelSource for Fake {
        fn n(&self) -> usize {
            self.n
        }
        fn diag(&self, i: usize) -> f64 {
            1001.0 * i as f64
        }
        fn column_into(&self, i: usize, out: &mut [f64]) {
            self.computed.fetch_add(1, Ordering::Relaxed);
            out.iter_mut().enumerate().for_each(|(j, o)| *o = (1000 * i + j) as f64);
        }
        fn entries_into(&self, i: usize, rows: &[usize], out: &mut [f64]) {
            out.iter_mut().zip(rows).for_each(|(o, &j)| *o = (1000 * i + j) as f64);
        }
    }

    fn fake(n: usize) -> Fake {
        Fake { n, computed: AtomicUsize::new(0) }
    }

    type Cache = ColumnCache<f64>;

    #[test]
    fn budget_sets_the_capacity() {
        let n = 1000; // 8000 bytes per column (4000 in single precision)
        assert_eq!(Cache::new(n, 1.0).unwrap().capacity(), (1 << 20) / 8000);
        assert_eq!(ColumnCache::<f32>::new(n, 1.0).unwrap().capacity(), (1 << 20) / 4000);
        assert_eq!(Cache::new(n, 1e-6).unwrap().capacity(), 2);
        assert_eq!(Cache::new(n, 1e9).unwrap().capacity(), n);
        assert_eq!(Cache::new(1, 1.0).unwrap().capacity(), 1);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(Cache::new(n, bad).is_err());
        }
        assert!(Cache::new(0, 1.0).is_err());
        assert!(Cache::with_columns(n, 1).is_err());
    }

    #[test]
    fn single_precision_columns_hold_the_rounded_values() {
        // K(j, i) = 1000 i + j + 1/3: not representable, so rounding shows.
        struct Thirds(usize);
        impl KernelSource for Thirds {
            fn n(&self) -> usize {
                self.0
            }
            fn diag(&self, i: usize) -> f64 {
                1001.0 * i as f64 + 1.0 / 3.0
            }
            fn column_into(&self, i: usize, out: &mut [f64]) {
                out.iter_mut().enumerate().for_each(|(j, o)| *o = (1000 * i + j) as f64 + 1.0 / 3.0);
            }
            fn entries_into(&self, i: usize, rows: &[usize], out: &mut [f64]) {
                out.iter_mut().zip(rows).for_each(|(o, &j)| *o = (1000 * i + j) as f64 + 1.0 / 3.0);
            }
        }
        let k = Thirds(8);
        let mut c = ColumnCache::<f32>::with_columns(8, 3).unwrap();
        let expected = |i: usize, j: usize| ((1000 * i + j) as f64 + 1.0 / 3.0) as f32;
        // Computed alone on a miss, and in a block by prefetch: the same rounded values.
        assert_eq!(c.get(5, &k)[2], expected(5, 2));
        assert_eq!(c.prefetch(&[1, 6], &k), 2);
        assert_eq!(c.peek(6).unwrap()[7], expected(6, 7));
        assert_eq!(c.peek(1).unwrap()[1] as f64, f32::rounded(k.diag(1)));
        assert_ne!(c.peek(1).unwrap()[1] as f64, k.diag(1));
    }

    #[test]
    fn lru_order_eviction_and_counters() {
        let k = fake(10);
        let mut c = Cache::with_columns(10, 3).unwrap();
        for i in [0, 1, 2] {
            assert_eq!(c.get(i, &k)[4], (1000 * i + 4) as f64);
        }
        assert_eq!(c.recency_order(), [2, 1, 0]);
        assert_eq!(c.get(0, &k)[9], 9.0); // hit: 0 becomes the most recent
        assert_eq!(c.recency_order(), [0, 2, 1]);
        assert_eq!(c.get(5, &k)[0], 5000.0); // evicts 1
        assert_eq!(c.recency_order(), [5, 0, 2]);
        assert!(!c.contains(1) && c.contains(2));
        assert_eq!(c.peek(2).unwrap()[1], 2001.0);
        assert!(c.peek(1).is_none());
        assert_eq!(c.recency_order(), [5, 0, 2]); // peek does not promote
        assert_eq!((c.hits(), c.misses()), (1, 4));
        assert_eq!(k.computed.load(Ordering::Relaxed), 4);
        c.get(2, &k); // promote the tail
        c.get(0, &k); // promote the middle
        assert_eq!(c.recency_order(), [0, 2, 5]);
        assert_eq!(c.len(), 3);
        c.clear();
        assert!(c.is_empty() && !c.contains(0));
        assert_eq!(c.get(0, &k)[1], 1.0);
        assert_eq!(c.recency_order(), [0]);
    }

    #[test]
    fn pairs_stay_resident() {
        let k = fake(6);
        let mut c = ColumnCache::with_columns(6, 2).unwrap();
        for (i, j) in [(0, 1), (2, 3), (3, 2), (4, 4), (5, 0), (0, 5)] {
            let (a, b) = c.get_pair(i, j, &k);
            assert_eq!((a[1], b[1]), ((1000 * i + 1) as f64, (1000 * j + 1) as f64));
        }
    }

    #[test]
    fn prefetch_loads_missing_columns_in_one_call() {
        let k = fake(20);
        let mut c = Cache::with_columns(20, 4).unwrap();
        c.get(7, &k);
        c.get(8, &k);
        c.get(9, &k);
        // 7 is cached (kept); 1 fills the free slot, 2 evicts 8; the repeated 1 is ignored.
        assert_eq!(c.prefetch(&[1, 7, 2, 1], &k), 2);
        assert_eq!(c.recency_order(), [2, 1, 7, 9]);
        assert_eq!(c.peek(2).unwrap()[3], 2003.0);
        // More missing than fit: 7 and 2 are kept, so only 2 of the 4 missing load.
        assert_eq!(c.prefetch(&[7, 2, 10, 11, 12, 13], &k), 2);
        assert_eq!(c.recency_order(), [11, 10, 2, 7]);
        assert!(!c.contains(12) && !c.contains(13));
        assert_eq!(c.get(12, &k)[0], 12000.0); // still computable after the truncation
        assert_eq!(c.prefetch(&[], &k), 0);
    }
}
