// Our driver for libsdca (Lapin's C++ headers, github.com/mlapin/libsdca; not part of
// this repository): benches/compare/libsdca.py compiles it against a checkout given on
// the command line and runs it on the same inputs as toprank. Prints one JSON object.
//
//   libsdca_driver fit DATA --k K --c C [--epsilon E] [--eval-epoch N] [--max-epoch N]
//                           [--save-w PATH]
//       Solves the top-k hinge alpha SVM ("topk_hinge_alpha" = l2_hinge_topk, no
//       smoothing) on DATA with libsdca's solver, one thread, no intercept; times
//       solver.solve() (its epochs and gap checks; the norms pass too).
//   libsdca_driver project ROWS --k K --rhs R --rho RHO [--repeats N] [--out PATH]
//       Times prox_topk_simplex_biased (the projection of libsdca's top-k alpha step)
//       on every row of ROWS, best of N passes, and writes the projections to PATH.
//       The projection works in place, so each row is first copied into a buffer (as
//       the step builds its row in place); `copy_ns` is that copy alone.
//
// File layout (little-endian, written by libsdca.py): DATA = int64 n, d, m, then n·d
// float64 (row-major X), then n int64 labels in 0..m−1. ROWS = int64 n, len, then n·len
// float64.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "sdca/solver.h"
#include "sdca/utility/logging.cpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode, path;
  std::map<std::string, std::string> opts;

  double num(const std::string& name, double fallback) const {
    auto it = opts.find(name);
    return it == opts.end() ? fallback : std::stod(it->second);
  }
  double required(const std::string& name) const {
    auto it = opts.find(name);
    if (it == opts.end()) throw std::runtime_error("missing --" + name);
    return std::stod(it->second);
  }
  std::string text(const std::string& name) const {
    auto it = opts.find(name);
    return it == opts.end() ? std::string() : it->second;
  }
};

Args parse(int argc, char** argv) {
  if (argc < 3) throw std::runtime_error("usage: libsdca_driver fit|project FILE [--name value]...");
  Args a{argv[1], argv[2], {}};
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string key = argv[i];
    if (key.rfind("--", 0) != 0) throw std::runtime_error("expected --name, got " + key);
    a.opts[key.substr(2)] = argv[i + 1];
  }
  return a;
}

struct File {
  std::FILE* f;
  explicit File(const std::string& path, const char* mode) : f(std::fopen(path.c_str(), mode)) {
    if (!f) throw std::runtime_error("cannot open " + path);
  }
  ~File() { std::fclose(f); }
  template <typename T>
  void read(T* out, std::size_t count) {
    if (std::fread(out, sizeof(T), count, f) != count) throw std::runtime_error("short read");
  }
  template <typename T>
  void write(const T* in, std::size_t count) {
    if (std::fwrite(in, sizeof(T), count, f) != count) throw std::runtime_error("short write");
  }
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU time of this process: on a shared machine it counts only the time the process
// ran, which wall time does not.
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int fit(const Args& args) {
  File file(args.path, "rb");
  std::int64_t header[3];
  file.read(header, 3);
  const auto n = static_cast<std::size_t>(header[0]), d = static_cast<std::size_t>(header[1]),
             m = static_cast<std::size_t>(header[2]);
  std::vector<double> X(n * d);
  file.read(X.data(), X.size());
  std::vector<std::int64_t> y64(n);
  file.read(y64.data(), n);
  std::vector<double> labels(y64.begin(), y64.end());

  const double c = args.required("c");
  const auto k = static_cast<sdca::size_type>(args.required("k"));
  std::vector<double> W(d * m, 0.0), A(m * n, 0.0);
  auto ctx = sdca::make_context(sdca::make_input_feature(d, n, X.data()),
                                sdca::make_output_multiclass(labels.begin(), labels.end()),
                                sdca::make_objective_l2_hinge_topk<double>(c, k), A.data(), W.data());
  if (ctx.train.num_classes() != m) throw std::runtime_error("every class must occur in the labels");
  ctx.criteria.epsilon = args.num("epsilon", 1e-3);
  ctx.criteria.eval_epoch = static_cast<sdca::size_type>(args.num("eval-epoch", 10));
  ctx.criteria.max_epoch = static_cast<sdca::size_type>(args.num("max-epoch", 1000));
  sdca::logging::set_level(sdca::logging::level::none);

  auto solver = sdca::make_solver(ctx);
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  solver.solve();
  const double cpu = cpu_seconds() - cpu_start;
  const double seconds = seconds_since(start);

  const auto& last = ctx.train.evals.back();
  std::printf(
      "{\"seconds\": %.9g, \"cpu_seconds\": %.9g, \"epochs\": %zu, \"status\": \"%s\", \"primal\": %.17g, \"dual\": %.17g, "
      "\"gap\": %.17g, \"checks\": %zu}\n",
      seconds, cpu, static_cast<std::size_t>(ctx.epoch), ctx.status_name().c_str(), static_cast<double>(last.primal),
      static_cast<double>(last.dual), static_cast<double>(last.relative_gap()), ctx.train.evals.size());
  const std::string save = args.text("save-w");
  if (!save.empty()) {
    // libsdca keeps W as d × m column-major: the weights of class j are contiguous.
    File out(save, "wb");
    out.write(W.data(), W.size());
  }
  return 0;
}

int project(const Args& args) {
  File file(args.path, "rb");
  std::int64_t header[2];
  file.read(header, 2);
  const auto n = static_cast<std::size_t>(header[0]), len = static_cast<std::size_t>(header[1]);
  std::vector<double> rows(n * len);
  file.read(rows.data(), rows.size());

  const auto k = static_cast<std::ptrdiff_t>(args.required("k"));
  const double rhs = args.required("rhs"), rho = args.required("rho");
  const int repeats = static_cast<int>(args.num("repeats", 5));
  std::vector<double> out(n * len), aux(len);

  double best = INFINITY, best_copy = INFINITY;
  for (int r = 0; r < repeats; ++r) {
    auto start = Clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      double* row = out.data() + i * len;
      std::memcpy(row, rows.data() + i * len, len * sizeof(double));
      sdca::prox_topk_simplex_biased(row, row + len, aux.data(), k, rhs, rho);
    }
    best = std::min(best, seconds_since(start));
    // The copy alone, on the same buffers (its result is overwritten by the next pass).
    start = Clock::now();
    for (std::size_t i = 0; i < n; ++i) {
      std::memcpy(aux.data(), rows.data() + i * len, len * sizeof(double));
      asm volatile("" : : "r"(aux.data()) : "memory");
    }
    best_copy = std::min(best_copy, seconds_since(start));
  }
  const std::string save = args.text("out");
  if (!save.empty()) {
    File o(save, "wb");
    o.write(out.data(), out.size());
  }
  std::printf("{\"rows\": %zu, \"len\": %zu, \"ns_per_row\": %.6g, \"copy_ns\": %.6g}\n", n, len, 1e9 * best / n,
              1e9 * best_copy / n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse(argc, argv);
    if (args.mode == "fit") return fit(args);
    if (args.mode == "project") return project(args);
    throw std::runtime_error("mode must be fit or project, got " + args.mode);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "libsdca_driver: %s\n", e.what());
    return 2;
  }
}
