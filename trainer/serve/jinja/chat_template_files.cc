#include "trainer/serve/jinja/chat_template_files.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/json_read.h"

namespace fabkit::trainer::serve {

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(p.string() + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json read_config(const fs::path& dir) {
  fs::path p = dir / "tokenizer_config.json";
  if (!fs::exists(p)) return nlohmann::json::object();
  try {
    nlohmann::json j = parse_json_sorted(read_text(p), p.string());
    if (!j.is_object()) throw std::runtime_error(p.string() + ": not a JSON object");
    return j;
  } catch (const JsonReadError& e) {
    throw std::runtime_error(e.what());
  }
}

std::map<std::string, std::string> special_tokens(const nlohmann::json& config, const fs::path& p) {
  std::map<std::string, std::string> out;
  for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    if (!config.contains(key) || config[key].is_null()) continue;
    const nlohmann::json& t = config[key];
    if (t.is_string()) {
      out[key] = t.get<std::string>();
    } else if (t.is_object() && t.contains("content") && t["content"].is_string()) {
      out[key] = t["content"].get<std::string>();  // an AddedToken
    } else {
      throw std::runtime_error(p.string() + ": \"" + key +
                               "\" is neither a string nor {\"content\": \"...\"}");
    }
  }
  return out;
}

std::string pick(const std::map<std::string, std::string>& named, const std::string& name,
                 bool has_tools, const std::string& where, std::string* chosen) {
  auto list = [&] {
    std::string s;
    for (const auto& [k, v] : named) s += (s.empty() ? "" : ", ") + k;
    return s;
  };
  if (!name.empty()) {
    auto it = named.find(name);
    if (it == named.end())
      throw std::runtime_error(where + " has no chat template named '" + name +
                               "' (it has: " + list() + ")");
    *chosen = name;
    return it->second;
  }
  if (has_tools && named.count("tool_use")) {
    *chosen = "tool_use";
    return named.at("tool_use");
  }
  if (named.count("default")) {
    *chosen = "default";
    return named.at("default");
  }
  throw std::runtime_error(where + " has several chat templates (" + list() +
                           ") and none named 'default': name one, or pass --chat-template FILE");
}

}  // namespace

ChatTemplateFiles load_chat_template(const fs::path& model_dir, const std::string& name,
                                     bool has_tools) {
  const fs::path config_path = model_dir / "tokenizer_config.json";
  const nlohmann::json config = read_config(model_dir);
  ChatTemplateFiles out;
  out.special_tokens = special_tokens(config, config_path);

  std::map<std::string, std::string> named;
  std::string where;
  if (fs::exists(model_dir / "chat_template.jinja")) {
    where = (model_dir / "chat_template.jinja").string();
    named["default"] = read_text(model_dir / "chat_template.jinja");
    fs::path extra = model_dir / "additional_chat_templates";
    if (fs::is_directory(extra))
      for (const auto& e : fs::directory_iterator(extra))
        if (e.path().extension() == ".jinja") named[e.path().stem().string()] = read_text(e.path());
  } else if (config.contains("chat_template") && !config["chat_template"].is_null()) {
    where = config_path.string();
    const nlohmann::json& t = config["chat_template"];
    if (t.is_string()) {
      named["default"] = t.get<std::string>();
    } else if (t.is_array()) {
      for (const auto& entry : t) {
        if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
            !entry.contains("template") || !entry["template"].is_string())
          throw std::runtime_error(where +
                                   ": \"chat_template\" list entries must be "
                                   "{\"name\": \"...\", \"template\": \"...\"}");
        named[entry["name"].get<std::string>()] = entry["template"].get<std::string>();
      }
    } else {
      throw std::runtime_error(where + ": \"chat_template\" is neither a string nor a list");
    }
  } else {
    throw std::runtime_error(model_dir.string() +
                             " has no chat template (no chat_template.jinja, no \"chat_template\" "
                             "in tokenizer_config.json): pass --chat-template FILE");
  }
  std::string chosen;
  out.source = pick(named, name, has_tools, where, &chosen);
  out.origin = where + " (" + chosen + ")";
  return out;
}

ChatTemplateFiles load_chat_template_file(const fs::path& file, const fs::path& model_dir) {
  ChatTemplateFiles out;
  out.source = read_text(file);
  out.origin = file.string();
  out.special_tokens = special_tokens(read_config(model_dir), model_dir / "tokenizer_config.json");
  return out;
}

}  // namespace fabkit::trainer::serve
