//! Criterion benchmarks of the compressed-domain products (`toprank::pq::dot`, `tdot`)
//! at the paper's shape ratio: n = 100,000 rows, d = 4,096 features in M = 512
//! sub-spaces of 8, 256 centroids each, m = 128 columns of B, float32.
//!
//! Codebooks and codes are seeded random values (the products' cost does not depend on
//! how the codes were learnt). Everything runs on the global rayon pool (all cores;
//! `RAYON_NUM_THREADS` to change). `benches/compare/pq.py` puts the same products side
//! by side with NumPy on the decoded matrix.
//!
//! Results go to `<target>/criterion-pq` unless `CRITERION_HOME` is set:
//!     cargo bench --bench pq
//! A quicker, smaller shape (n = 20,000):  cargo bench --bench pq -- small

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::Rng;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use toprank::pq::{dot, tdot, Codebooks};

const SEED: u64 = 0x7071_2d70_726f_6475;
const SUBSPACES: usize = 512;
const DSUB: usize = 8;
const KSUB: usize = 256;
const M: usize = 128;

fn products(c: &mut Criterion) {
    let mut rng = Rng::new(SEED);
    let d = SUBSPACES * DSUB;
    let centroids: Vec<f32> = (0..SUBSPACES * KSUB * DSUB).map(|_| rng.normal() as f32).collect();
    let books = Codebooks::new(&centroids, SUBSPACES, KSUB, DSUB).expect("valid codebooks");
    let w: Vec<f32> = (0..d * M).map(|_| rng.normal() as f32).collect();
    let mut group = c.benchmark_group("pq");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(6));
    for (label, n) in [("small", 20_000usize), ("paper", 100_000)] {
        let codes: Vec<u8> = (0..n * SUBSPACES).map(|_| rng.below(KSUB) as u8).collect();
        let b: Vec<f32> = (0..n * M).map(|_| rng.normal() as f32).collect();
        // Throughput in table lookups (or bucket additions) of one m-vector: n·M.
        group.throughput(Throughput::Elements((n * SUBSPACES) as u64));
        group.bench_with_input(BenchmarkId::new(format!("{label}/dot"), n), &n, |bench, _| {
            bench.iter(|| black_box(dot(&books, &codes, &w, M).expect("dot")))
        });
        group.bench_with_input(BenchmarkId::new(format!("{label}/tdot"), n), &n, |bench, _| {
            bench.iter(|| black_box(tdot(&books, &codes, &b, M).expect("tdot")))
        });
    }
    group.finish();
}

fn config() -> Criterion {
    common::with_output_dir(Criterion::default(), "criterion-pq")
}

criterion_group! { name = benches; config = config(); targets = products }
criterion_main!(benches);
