// Command-line layers for caked and cakectl, on CLI11's own parsing and config-file support:
// flags > environment > config file > defaults.
//
// CLI11 applies a config file only to options the command line left unset, but applies an
// option's environment variable only when the config file left it unset too (config > env), so
// environment values are passed as flags placed before the user's (each option takes the last
// value given). Config files are CLI11's TOML/INI form, `key = value`; a key may be written
// with underscores (`max_message_bytes`) for the option `--max-message-bytes`.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"

namespace cake::base {

// Reads `key = value` files whose keys may use '_' where the option names use '-'.
class UnderscoreKeysConfig : public CLI::ConfigTOML {
 public:
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> read = CLI::ConfigTOML::from_config(input);
    for (CLI::ConfigItem& item : read)
      for (char& ch : item.name)
        if (ch == '_') ch = '-';
    return read;
  }
};

// Every option of `app` takes the last value given; config files are read with
// UnderscoreKeysConfig, and a key that names no option is an error.
inline void UseLayeredOptions(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.config_formatter(std::make_shared<UnderscoreKeysConfig>());
  app.allow_config_extras(CLI::config_extras_mode::error);  // an unknown key is an error
}

// argv as CLI11's parse(std::vector) wants it (reversed, without the program name), with
// "--flag=value" for each (flag, variable) whose environment variable is set and not empty,
// placed so that the user's own flags come later and win.
inline std::vector<std::string> ArgsWithEnvironment(
    int argc, char** argv, const std::vector<std::pair<std::string, std::string>>& flag_env) {
  std::vector<std::string> args;
  for (const auto& [flag, env] : flag_env)
    if (const char* v = std::getenv(env.c_str()); v != nullptr && *v != '\0')
      args.push_back(flag + "=" + v);
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return std::vector<std::string>(args.rbegin(), args.rend());
}

}  // namespace cake::base
