// One thread, one parse per line, every line parsed in place in the file's buffer (the
// rest of the file, then SIMDJSON_PADDING bytes, follow it: simdjson at its best).
//   simdjson_lines FILE [REPS]   prints the best of REPS for DOM and for On-Demand.
// DOM validates the whole line (stage 1 and the tape); On-Demand walks every value of
// the line (strings unescaped, numbers parsed), so both check every byte as the index does
// (simdjson also validates UTF-8, which the index does not: pi decodes lossily).
#include <simdjson.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
using namespace simdjson;

static size_t walk(ondemand::value v) {
  switch (v.type()) {
  case ondemand::json_type::object: { size_t n = 1; for (auto f : v.get_object()) { n += f.unescaped_key().value().size(); n += walk(f.value()); } return n; }
  case ondemand::json_type::array: { size_t n = 1; for (auto e : v.get_array()) n += walk(e.value()); return n; }
  case ondemand::json_type::string: return v.get_string().value().size();
  case ondemand::json_type::number: return size_t(v.get_number().value().get_double() != 0);
  case ondemand::json_type::boolean: return size_t(v.get_bool().value());
  default: return v.is_null().value() ? 0 : 1;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s FILE [REPS]\n", argv[0]); return 2; }
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  padded_string file;
  if (padded_string::load(argv[1]).get(file)) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
  const char *b = file.data(); size_t n = file.size();
  size_t sum = 0;
  for (int mode = 0; mode < 2; mode++) {
    double best = 1e9; size_t lines = 0, bad = 0;
    dom::parser dp; ondemand::parser op;
    for (int r = 0; r < reps; r++) {
      lines = bad = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (size_t i = 0; i < n;) {
        const char *nl = (const char *)memchr(b + i, '\n', n - i);
        size_t end = nl ? size_t(nl - b) : n, len = end - i;
        lines++;
        if (mode == 0) { dom::element e; bad += dp.parse(b + i, len, false).get(e) != SUCCESS; }
        else {
          ondemand::document d; ondemand::value v;
          if (op.iterate(padded_string_view(b + i, len, n + SIMDJSON_PADDING - i)).get(d) || d.get_value().get(v)) bad++;
          else { try { sum += walk(v); } catch (simdjson_error &) { bad++; } }
        }
        i = end + 1;
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s < best) best = s;
    }
    printf("simdjson %s (%s): %zu lines, %zu not parsed, best %.1f ms, %.2f GB/s\n", mode ? "ondemand" : "dom",
           get_active_implementation()->name().c_str(), lines, bad, best * 1e3, n / best / 1e9);
  }
  return sum == 42 ? 3 : 0; // keep the walk's results live
}
