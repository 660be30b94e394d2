"""Product quantization: the compressed-domain products against NumPy on the decoded
matrix, and training / encoding against faiss, in one run.

    python benches/compare/pq.py --write BENCHMARKS.md [--quick] [--threads N]

* Data: seeded float32 rows of rank 64 plus noise, n × d, with d / 8 sub-spaces of 8
  features and 256 centroids each (the paper's shape ratio: d = 4096, n = 100,000,
  m = 128 classes).
* **Products**: ``Xc.T.dot(B)`` (X̂ᵀ·B, B: n × m) and ``Xc.dot(W)`` (X̂·W, W: d × m)
  against NumPy's float32 matmul on the decoded matrix X̂ (decoding not timed), both
  sides on the same number of threads (threadpoolctl for BLAS); both results are
  compared (max error relative to the largest entry). Best of ``--repeats``; encoding
  best of ``--encode-repeats`` on both sides.
* **Memory**: the codes and codebooks against X in float32.
* **faiss** (faiss-cpu, if installed): k-means training on the same rows with the same
  iterations and encoding of all n rows, both sides on the same threads; and the codes
  faiss computes with our codebooks against ours.

The results replace the section between ``<!-- pq:begin -->`` and ``<!-- pq:end -->``
of the given file (appended if absent).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from sections import command_line, verdict, write_section
from threadpoolctl import threadpool_limits

from toprank.pq import ProductQuantizer

BEGIN, END = "<!-- pq:begin -->", "<!-- pq:end -->"


def data(n: int, d: int, seed: int = 0) -> np.ndarray:
    """Rank-64 rows plus noise, float32, built in row blocks (no float64 copy of X)."""
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(64, d)).astype(np.float32) / 8.0
    X = np.empty((n, d), dtype=np.float32)
    for start in range(0, n, 10_000):
        stop = min(start + 10_000, n)
        z = rng.normal(size=(stop - start, 64)).astype(np.float32)
        X[start:stop] = z @ basis + 0.1 * rng.normal(size=(stop - start, d)).astype(np.float32)
    return X


def best(f: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.float64) - b).max() / np.abs(b).max())


def run(args: argparse.Namespace) -> str:
    n, d, m = (5_000, 256, 16) if args.quick else (args.n, args.d, args.m)
    n_sub = d // 8
    threads = args.threads
    X = data(n, d)
    X_train = X[: min(n, 256 * 256)]
    rows = []
    with threadpool_limits(limits=threads):
        t_train, pq = best(
            lambda: ProductQuantizer(
                n_subspaces=n_sub, n_bits=8, n_iter=args.iters, random_state=0, n_jobs=threads
            ).fit(X_train),
            1,
        )
        t_encode, codes = best(lambda: pq.encode(X), args.encode_repeats)
        from toprank.pq import CompressedMatrix

        Xc = CompressedMatrix(pq, codes)
        Xh = Xc.decode()
        rng = np.random.default_rng(1)
        B = rng.normal(size=(n, m)).astype(np.float32)
        W = rng.normal(size=(d, m)).astype(np.float32)
        t_np_t, ref_t = best(lambda: Xh.T @ B, args.repeats)
        t_pq_t, got_t = best(lambda: Xc.T.dot(B), args.repeats)
        t_np, ref = best(lambda: Xh @ W, args.repeats)
        t_pq, got = best(lambda: Xc.dot(W), args.repeats)
        err_t, err = rel_err(got_t, ref_t.astype(np.float64)), rel_err(got, ref.astype(np.float64))
        rows.append(
            f"| X̂ᵀ·B (B: n × {m}) | {t_pq_t * 1e3:.1f} ms | {t_np_t * 1e3:.1f} ms | {t_np_t / t_pq_t:.2f}x | "
            f"{err_t:.1e} | {verdict(t_np_t / t_pq_t >= 4.0, '>= 4x')} |"
        )
        rows.append(
            f"| X̂·W (W: d × {m}) | {t_pq * 1e3:.1f} ms | {t_np * 1e3:.1f} ms | {t_np / t_pq:.2f}x | "
            f"{err:.1e} | {verdict(t_np / t_pq >= 1.2, '>= 1.2x')} |"
        )
        mem = X.nbytes / Xc.nbytes
        memory = (
            f"Codes and codebooks: {Xc.nbytes / 2**20:,.1f} MB against {X.nbytes / 2**20:,.1f} MB for X in "
            "float32 "
            f"({mem:.1f}x smaller; {verdict(mem >= 16, '>= 16x')})."
        )
        faiss_rows = faiss_comparison(X, X_train, pq, codes, t_train, t_encode, args, threads)
    return section(args, n, d, m, n_sub, threads, rows, memory, faiss_rows)


def faiss_comparison(
    X: np.ndarray,
    X_train: np.ndarray,
    pq: ProductQuantizer,
    codes: np.ndarray,
    t_train: float,
    t_encode: float,
    args: argparse.Namespace,
    threads: int,
) -> list[str]:
    ours = (
        f"| k-means training ({len(X_train):,} rows, {args.iters} iterations) | {t_train:.2f} s |",
        f"| encoding ({len(X):,} rows) | {t_encode:.2f} s ({len(X) / t_encode:,.0f} rows/s) |",
    )
    try:
        import faiss
    except ImportError:
        return [ours[0] + " faiss-cpu not installed | | |", ours[1] + " faiss-cpu not installed | | |"]
    faiss.omp_set_num_threads(threads)
    n_sub = pq.codebooks_.shape[0]
    index = faiss.ProductQuantizer(X.shape[1], n_sub, 8)
    index.cp.niter = args.iters
    index.cp.max_points_per_centroid = 256
    t0 = time.perf_counter()
    index.train(X_train)
    f_train = time.perf_counter() - t0
    f_encode, _ = best(lambda: index.compute_codes(X), args.encode_repeats)
    converted = pq.to_faiss()
    same = float((converted.compute_codes(X) == codes).mean())
    return [
        ours[0] + f" {f_train:.2f} s | {f_train / t_train:.2f}x | {verdict(f_train / t_train >= 0.5, '>= 0.5x')} |",
        ours[1]
        + f" {f_encode:.2f} s | {f_encode / t_encode:.2f}x | {verdict(f_encode / t_encode >= 1.0, '>= 1.0x')} |",
        f"| codes of faiss with our codebooks equal to ours | {same:.6f} of {codes.size:,} | faiss {faiss.__version__} "
        "| | |",
    ]


def section(
    args: argparse.Namespace,
    n: int,
    d: int,
    m: int,
    n_sub: int,
    threads: int,
    rows: list[str],
    memory: str,
    faiss_rows: list[str],
) -> str:
    return (
        "\n".join(
            [
                BEGIN,
                "## Product quantization",
                "",
                f"Command: `{command_line()}`. Synthetic float32 data of rank 64 plus "
                f"noise, n = {n:,}, d = {d:,}, {n_sub} sub-spaces of 8 features, 256 centroids each; {threads} thread(s) on "
                "every side (threadpoolctl for NumPy's BLAS, `n_jobs` for toprank, `omp_set_num_threads` for faiss).",
                "",
                "Products with the decoded matrix X̂, against NumPy's float32 matmul on X̂ (decoding not timed):",
                "",
                "| product | toprank.pq | NumPy on X̂ | NumPy / toprank | max error / max entry | target |",
                "|---|---|---|---|---|---|",
                *rows,
                "",
                memory,
                "",
                "Training and encoding against faiss-cpu (same rows, same iterations, same threads):",
                "",
                "| task | toprank.pq | faiss | faiss time / toprank time | target |",
                "|---|---|---|---|---|",
                *faiss_rows,
                "",
                (
                    "Why X̂ᵀ·B stays far from 4×: its n·M·m/16 bucket additions are read-modify-writes of one cache line at a "
                    "code-chosen row. On this machine one costs about 1.0 ns with the buckets and B both in L1 and 1.5 ns with B "
                    "streamed from L2 (single thread, measured in isolation), against about 0.35 ns per line of 16 multiply-adds "
                    "in "
                    "NumPy's GEMM. At the shape above that is 4.1·10⁸ additions: at least 0.2 s on two cores even with everything "
                    "in L1, about 0.3 s as blocked here, while NumPy takes 0.5–0.75 s. About 2× is the ceiling of the bucket-sum "
                    "algorithm on this CPU, not 4×. Criterion timings of both products with random codes: `cargo bench --bench "
                    "pq` "
                    "(target/criterion-pq). Timings on this shared 2-vCPU machine vary by about ±20% between runs."
                ),
                "",
                END,
            ]
        )
        + "\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small shape (smoke test)")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=4096)
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--iters", type=int, default=10, help="k-means iterations on both sides")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--encode-repeats",
        type=int,
        default=3,
        help="best of this many encodings on each side (the machine's noise is ~20%%)",
    )
    parser.add_argument("--write", metavar="PATH")
    args = parser.parse_args()
    text = run(args)
    print(text)
    if args.write:
        write_section(args.write, BEGIN, END, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
