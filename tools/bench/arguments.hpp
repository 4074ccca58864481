/**
 * @file arguments.hpp
 * @brief The command line of every benchmark in tools/bench/: each bench names its flags once (a switch, a string,
 * a count, a comma list), and `arguments_t::parse` reads `--flag value` pairs into them, answers `--help` with the
 * list of flags, and refuses an unknown flag or a flag without its value with a line on standard error.
 */
#ifndef UFORM_TOOLS_BENCH_ARGUMENTS_HPP
#define UFORM_TOOLS_BENCH_ARGUMENTS_HPP

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tools/bench/report.hpp"

namespace uform::bench {

/** @brief A count from its decimal text, raised to `floor` (`strtoul`'s reading: text that is no number reads 0). */
inline std::size_t count_of(std::string const &text, std::size_t floor) {
    return std::max<std::size_t>(std::strtoul(text.c_str(), nullptr, 10), floor);
}

/** @brief The flags one benchmark accepts, each bound to the option it sets. */
class arguments_t {
  public:
    /** @brief Starts the list; `program` and `synopsis` (the positional part, if any) head the `--help` text. */
    explicit arguments_t(char const *program, char const *synopsis = "") : program_(program), synopsis_(synopsis) {}

    /** @brief A switch without a value: present, it sets `target`. */
    arguments_t &flag(char const *name, bool &target, char const *what) {
        flags_.push_back({name, "", what, [&target](std::string const &) { target = true; }});
        return *this;
    }
    /** @brief A string value, such as a path; `value` names it in `--help`. */
    arguments_t &text(char const *name, std::string &target, char const *what, char const *value = "PATH") {
        flags_.push_back({name, value, what, [&target](std::string const &text) { target = text; }});
        return *this;
    }
    /** @brief A count, at least `floor` (a smaller one, or text that is no number, takes `floor`). */
    arguments_t &count(char const *name, std::size_t &target, char const *what, std::size_t floor = 1) {
        flags_.push_back(
            {name, "N", what, [&target, floor](std::string const &value) { target = count_of(value, floor); }});
        return *this;
    }
    /** @brief A comma list of names; it replaces the default list. */
    arguments_t &list(char const *name, std::vector<std::string> &target, char const *what) {
        flags_.push_back({name, "A,B", what, [&target](std::string const &value) { target = split(value); }});
        return *this;
    }
    /** @brief A comma list of counts, each at least 1; it replaces the default list. */
    arguments_t &counts(char const *name, std::vector<std::size_t> &target, char const *what) {
        flags_.push_back({name, "N,M", what, [&target](std::string const &value) {
                              target.clear();
                              for (std::string const &item : split(value)) target.push_back(count_of(item, 1));
                          }});
        return *this;
    }
    /** @brief A value the bench reads its own way. */
    arguments_t &custom(char const *name, char const *value, char const *what,
                        std::function<void(std::string const &)> set) {
        flags_.push_back({name, value, what, std::move(set)});
        return *this;
    }

    /**
     * @brief Reads `argv[from]` on. Answers true when the bench should run; false when it should exit with `exit_code`:
     * 0 after `--help` printed the flags on standard output, 2 after an unknown flag or a flag without its value.
     */
    bool parse(int argc, char **argv, int &exit_code, int from = 1) const {
        for (int i = from; i < argc; ++i) {
            std::string const name = argv[i];
            if (name == "--help" || name == "-h") {
                print_help();
                exit_code = 0;
                return false;
            }
            auto const found =
                std::find_if(flags_.begin(), flags_.end(), [&](flag_t const &f) { return name == f.name; });
            if (found == flags_.end()) {
                std::fprintf(stderr, "unknown flag %s (--help lists them)\n", name.c_str());
                exit_code = 2;
                return false;
            }
            if (!*found->value) {
                found->set("");
                continue;
            }
            if (i + 1 == argc) {
                std::fprintf(stderr, "%s needs a value\n", name.c_str());
                exit_code = 2;
                return false;
            }
            found->set(argv[++i]);
        }
        return true;
    }

    /** @brief Prints the usage line and one line per flag to `to`. */
    void print_help(std::FILE *to = stdout) const {
        std::fprintf(to, "usage: %s%s%s [flags]\n", program_, *synopsis_ ? " " : "", synopsis_);
        for (flag_t const &f : flags_) {
            std::string const head = std::string(f.name) + (*f.value ? " " : "") + f.value;
            std::fprintf(to, "  %-22s %s\n", head.c_str(), f.what);
        }
        std::fprintf(to, "  %-22s %s\n", "--help", "prints this list");
    }

  private:
    struct flag_t {
        char const *name;
        char const *value; ///< the value's placeholder in `--help`; empty for a switch
        char const *what;
        std::function<void(std::string const &)> set;
    };
    char const *program_;
    char const *synopsis_;
    std::vector<flag_t> flags_;
};

} // namespace uform::bench

#endif // UFORM_TOOLS_BENCH_ARGUMENTS_HPP
