//! Criterion benchmarks of the kernel module: RBF kernel columns computed from a dense
//! `f64` design matrix, one at a time and blocked, and the column cache's hit path.
//!
//! Grid: n ∈ {2000, 20000} examples × d ∈ {16, 784} features, x_ij ~ N(0, 1/d) (so
//! ‖x‖ ≈ 1), γ = 1 (scikit-learn's `gamma="scale"` for this data). Per (n, d):
//! * `single`: one `column_into` (serial; what a solver's thread computes on its own);
//! * `parallel64`: 64 columns, `column_into` on each in parallel (the trait's default
//!   `columns_into`: every column streams all of X);
//! * `blocked64`: 64 columns with `DataKernel::columns_into` (X streamed once per
//!   block of columns, row tasks in parallel);
//! * `cache_hit`: `ColumnCache::get` of a resident column (cycling over 64);
//! * `scores_hit`: `KernelModel::scores_mut` with a cached column, m = 10 classes and
//!   10% of the dual rows nonzero (the kernel SDCA inner step without the loss).
//!
//! Throughput is in columns (or lookups), so criterion's rate is columns per second.
//! Everything runs on the global rayon pool (all cores; `RAYON_NUM_THREADS` to change).
//!
//! Results go to `<target>/criterion-kernels` unless `CRITERION_HOME` is set. About a
//! minute in all:
//!     cargo bench --bench kernels
//! One size:  cargo bench --bench kernels -- 'n=20000/d=784'

use std::hint::black_box;
use std::time::Duration;

mod common;

use common::Rng;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rayon::prelude::*;
use toprank::data::{DenseRows, RowBuf};
use toprank::kernels::{ColumnCache, DataKernel, KernelFunction, KernelSource};
use toprank::solvers::topk_svm::{KernelModel, ScoreModel};

const NS: [usize; 2] = [2_000, 20_000];
const DS: [usize; 2] = [16, 784];
const BLOCK: usize = 64;
const CLASSES: usize = 10;
const SEED: u64 = 0x6b65_726e_656c_7321;

fn kernels(c: &mut Criterion) {
    let f = KernelFunction::Rbf { gamma: 1.0 };
    for n in NS {
        for d in DS {
            let mut rng = Rng::new(SEED ^ (n * d) as u64);
            let scale = 1.0 / (d as f64).sqrt();
            let x: Vec<f64> = (0..n * d).map(|_| scale * rng.normal()).collect();
            let design = DenseRows::new(&x, n, d).expect("design");
            let kernel = DataKernel::new(&design, f).expect("kernel");
            let idx: Vec<usize> = (0..BLOCK).map(|b| (b * 7919) % n).collect();
            let id = |name: &str| BenchmarkId::new(name, format!("n={n}/d={d}"));

            // The three ways must agree (bit for bit: one arithmetic path).
            let mut blocked = vec![0.0; BLOCK * n];
            let mut single = vec![0.0; n];
            kernel.columns_into(&idx, &mut blocked);
            kernel.column_into(idx[5], &mut single);
            assert_eq!(&blocked[5 * n..6 * n], &single[..]);

            let mut group = c.benchmark_group("rbf_columns");
            let big = n * d >= 10_000_000;
            group.sample_size(10);
            if big {
                group.measurement_time(Duration::from_secs(4));
            }
            group.throughput(Throughput::Elements(1));
            let mut t = 0;
            group.bench_function(id("single"), |b| {
                b.iter(|| {
                    t += 1;
                    kernel.column_into(idx[t % BLOCK], &mut single);
                    black_box(single[0])
                })
            });
            group.throughput(Throughput::Elements(BLOCK as u64));
            group.bench_function(id("parallel64"), |b| {
                b.iter(|| {
                    blocked.par_chunks_mut(n).zip(idx.par_iter()).for_each(|(col, &i)| kernel.column_into(i, col));
                    black_box(blocked[0])
                })
            });
            group.bench_function(id("blocked64"), |b| {
                b.iter(|| {
                    kernel.columns_into(&idx, &mut blocked);
                    black_box(blocked[0])
                })
            });
            group.finish();

            let mut group = c.benchmark_group("kernel_cache");
            group.throughput(Throughput::Elements(1));
            let mut cache = ColumnCache::with_columns(n, BLOCK).expect("cache");
            cache.prefetch(&idx, &kernel);
            let mut t = 0;
            group.bench_function(id("cache_hit"), |b| {
                b.iter(|| {
                    t += 1;
                    black_box(cache.get(idx[t % BLOCK], &kernel)[t % n])
                })
            });
            assert_eq!(cache.misses(), BLOCK as u64);

            // 10% of the dual rows nonzero, all 64 query columns cached.
            let a: Vec<f64> =
                (0..n * CLASSES).map(|v| if (v / CLASSES) % 10 == 3 { rng.normal() } else { 0.0 }).collect();
            let mut model = KernelModel::new(&kernel, CLASSES, None, cache).expect("model");
            model.sync_dual(&a).expect("dual");
            let (mut s, mut buf) = (vec![0.0; CLASSES], RowBuf::new());
            group.bench_function(id("scores_hit"), |b| {
                b.iter(|| {
                    t += 1;
                    model.scores_mut(idx[t % BLOCK], &a, &mut s, &mut buf);
                    black_box(s[0])
                })
            });
            group.finish();
        }
    }
}

fn config() -> Criterion {
    let c = Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
    common::with_output_dir(c, "criterion-kernels")
}

criterion_group! {
    name = benches;
    config = config();
    targets = kernels
}
criterion_main!(benches);
