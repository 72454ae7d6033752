#include "suite.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>

namespace agentd::conformance {
namespace {

std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

Suite::Suite(SuiteOptions options) : options_(std::move(options)) {
  std::mt19937_64 rng{std::random_device{}()};
  char tag[17];
  std::snprintf(tag, sizeof(tag), "%016llx", static_cast<unsigned long long>(rng()));
  run_tag_ = std::string(tag, 8);
  scratch_dir_ = options_.scratch_root + "/agentd-conformance-" + run_tag_;
}

int Suite::Run() {
  client::Client client(options_.client);
  // The scratch directory every check writes under; removed at the end.
  MkdirRequest scratch;
  scratch.path = scratch_dir_;
  scratch.parents = true;
  scratch.mode = 0777;  // checks that run as another user write here too
  Result<FileStat> made = client.MakeDir(scratch);
  if (!made.ok()) {
    std::printf("note: cannot create scratch directory %s (%s); file checks will fail\n",
                scratch_dir_.c_str(), made.status().ToString().c_str());
  }
  std::vector<CheckResult> results;
  int passed = 0, failed = 0, skipped = 0, number = 0;
  for (const Check& check : AllChecks()) {
    std::string full = check.area + ": " + check.name;
    if (!options_.filter.empty() && full.find(options_.filter) == std::string::npos) continue;
    ++number;
    CheckContext ctx(*this, client);
    ctx.set_scratch_dir(scratch_dir_ + "/" + std::to_string(number));
    CheckResult r;
    r.area = check.area;
    r.name = check.name;
    auto start = std::chrono::steady_clock::now();
    try {
      check.run(ctx);
      r.passed = true;
    } catch (const CheckFailure& f) {
      r.reason = f.reason;
    } catch (const CheckSkipped& s) {
      r.reason = s.reason;
      r.skipped = true;
    } catch (const std::exception& e) {
      r.reason = std::string("exception: ") + e.what();
    }
    r.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    const char* verdict = r.skipped ? "SKIP" : (r.passed ? "PASS" : "FAIL");
    std::printf("%s  %s (%lld ms)%s%s\n", verdict, full.c_str(),
                static_cast<long long>(r.duration.count()), r.reason.empty() ? "" : ": ",
                r.reason.c_str());
    std::fflush(stdout);
    if (r.skipped) {
      ++skipped;
    } else if (r.passed) {
      ++passed;
    } else {
      ++failed;
    }
    results.push_back(std::move(r));
  }
  if (made.ok()) {
    Result<DeleteResponse> removed = client.Remove(scratch_dir_, /*recursive=*/true);
    if (!removed.ok()) {
      std::printf("note: scratch directory %s not removed: %s\n", scratch_dir_.c_str(),
                  removed.status().ToString().c_str());
    }
  }
  std::printf("%d passed, %d failed", passed, failed);
  if (skipped) std::printf(", %d skipped", skipped);
  std::printf("\n");
  if (!options_.junit_path.empty()) WriteJunit(results);
  return failed == 0 && passed > 0 ? 0 : 1;
}

void Suite::WriteJunit(const std::vector<CheckResult>& results) const {
  std::ofstream out(options_.junit_path);
  int failures = 0, skipped = 0;
  double total = 0;
  for (const CheckResult& r : results) {
    failures += r.passed || r.skipped ? 0 : 1;
    skipped += r.skipped ? 1 : 0;
    total += static_cast<double>(r.duration.count()) / 1000.0;
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuite name=\"agentd-conformance\" tests=\"" << results.size() << "\" failures=\""
      << failures << "\" skipped=\"" << skipped << "\" time=\"" << total << "\">\n";
  for (const CheckResult& r : results) {
    out << "  <testcase classname=\"" << XmlEscape(r.area) << "\" name=\"" << XmlEscape(r.name)
        << "\" time=\"" << static_cast<double>(r.duration.count()) / 1000.0 << "\"";
    if (r.passed) {
      out << "/>\n";
    } else if (r.skipped) {
      out << ">\n    <skipped message=\"" << XmlEscape(r.reason) << "\"/>\n  </testcase>\n";
    } else {
      out << ">\n    <failure message=\"" << XmlEscape(r.reason) << "\"/>\n  </testcase>\n";
    }
  }
  out << "</testsuite>\n";
}

}  // namespace agentd::conformance
