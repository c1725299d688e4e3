"""Takes the agent's argv out of a docs/editors.md snippet the way its client would, for
tests/it/editors.rs. Prints the argv as a JSON list.

Usage: argv.py KIND FILE

  codecompanion, avante   Lua, run in LuaJIT (Neovim's Lua, through lupa) against stand-ins
                          for the plugin's modules that keep what `setup` was given; the argv is
                          then read from it as the plugin reads it.
  agent-shell             Emacs Lisp, read as data (sexpdata): the list given to `setq
  agent-shell-custom      agent-shell-anthropic-claude-acp-command`, or acp.el's
                          `(acp-make-client :command C :command-params '(...))`.
  acpx, rust-sdk,         a shell line (shlex): acpx's `--agent` value and the Rust example's
  python-sdk              `--command` value, split again as those clients split them; the
                          Python example's own arguments after the script.
"""

import json
import shlex
import sys

import lupa.luajit21 as lupa
import sexpdata

# What the plugins' `require`s give the snippet: `setup` keeps its table; CodeCompanion's
# `extend` merges the user's table into the preset the way vim.tbl_deep_extend("force") does.
LUA_STANDINS = r"""
local kept = {}
local function deep_extend(into, from)
  for k, v in pairs(from) do
    if type(v) == "table" and type(into[k]) == "table" then
      deep_extend(into[k], v)
    else
      into[k] = v
    end
  end
  return into
end
local presets = {
  claude_code = { commands = { default = { "claude-agent-acp" }, yolo = { "claude-agent-acp", "--yolo" } } },
}
package.preload["codecompanion"] = function()
  return { setup = function(config) kept.config = config end }
end
package.preload["codecompanion.adapters"] = function()
  return {
    extend = function(name, overrides)
      assert(presets[name], "no CodeCompanion ACP preset named " .. tostring(name))
      return deep_extend(deep_extend({ name = name }, presets[name]), overrides)
    end,
  }
end
package.preload["avante"] = function()
  return { setup = function(config) kept.config = config end }
end
return kept
"""


def lua_list(table):
    return [table[i] for i in range(1, len(table) + 1)]


def codecompanion(source):
    lua = lupa.LuaRuntime()
    kept = lua.execute(LUA_STANDINS)
    lua.execute(source)
    config = kept.config
    chosen = config.interactions.chat.adapter
    adapter = config.adapters.acp[chosen]()
    commands = adapter.commands
    return lua_list(commands.selected or commands.default)


def avante(source):
    lua = lupa.LuaRuntime()
    kept = lua.execute(LUA_STANDINS)
    lua.execute(source)
    config = kept.config
    provider = config.acp_providers[config.provider]
    # avante gives the agent PATH and this env only: HOME must be in it.
    assert provider.env is not None and provider.env.HOME, "avante's env gives no HOME"
    return [provider.command] + lua_list(provider.args)


def forms(source):
    return sexpdata.loads("(" + source + ")")


def walk(form):
    yield form
    if isinstance(form, list):
        for item in form:
            yield from walk(item)
    elif isinstance(form, sexpdata.Quoted):
        yield from walk(form.x)


def quoted_strings(form):
    assert isinstance(form, sexpdata.Quoted), f"not a quoted list: {form}"
    items = form.x
    # sexpdata's Symbol is a str too: a string literal is exactly a str.
    assert all(type(i) is str for i in items), f"not a list of strings: {items}"
    return list(items)


def agent_shell(source):
    for form in walk(forms(source)):
        if isinstance(form, list) and form[:2] == [
            sexpdata.Symbol("setq"),
            sexpdata.Symbol("agent-shell-anthropic-claude-acp-command"),
        ]:
            return quoted_strings(form[2])
    raise SystemExit("no (setq agent-shell-anthropic-claude-acp-command ...)")


def agent_shell_custom(source):
    for form in walk(forms(source)):
        if isinstance(form, list) and form and form[0] == sexpdata.Symbol("acp-make-client"):
            keys = {form[i]: form[i + 1] for i in range(1, len(form) - 1, 2)}
            command = keys[sexpdata.Symbol(":command")]
            assert type(command) is str, f":command is not a string: {command}"
            return [command] + quoted_strings(keys[sexpdata.Symbol(":command-params")])
    raise SystemExit("no (acp-make-client ...)")


def value_after(words, flag):
    return words[words.index(flag) + 1]


def shell_line(kind, source):
    lines = [l for l in source.splitlines() if l.strip() and not l.startswith("#")]
    assert len(lines) == 1, f"one command line expected: {lines}"
    words = shlex.split(lines[0])
    if kind == "acpx":
        assert words[0] == "acpx", words
        return shlex.split(value_after(words, "--agent"))
    if kind == "rust-sdk":
        assert words[:2] == ["cargo", "run"], words
        return shlex.split(value_after(words, "--command"))
    assert words[:2] == ["python", "examples/client.py"], words
    return words[2:]


def main(kind, path):
    source = open(path, encoding="utf-8").read()
    readers = {
        "codecompanion": codecompanion,
        "avante": avante,
        "agent-shell": agent_shell,
        "agent-shell-custom": agent_shell_custom,
    }
    if kind in readers:
        argv = readers[kind](source)
    else:
        argv = shell_line(kind, source)
    print(json.dumps(argv))


main(sys.argv[1], sys.argv[2])
