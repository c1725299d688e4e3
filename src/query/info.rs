//! What the two peers of a session said about themselves: who they are, the protocol version,
//! their capabilities and auth methods (`initialize`), the session's modes and the agent's slash
//! commands (the session's opening response and its later updates). `acptap ui`'s session info.
//!
//! Every read is bounded: `initialize` and the session's opening are near the connection's
//! start, and the latest mode and commands are found reading the session's lines backwards from
//! its end, stopping at the first that says. A session of hundreds of thousands of lines is
//! never read whole.
//!
//! Both protocol versions are read: v1 names the peers' info and capabilities `clientInfo`,
//! `agentInfo`, `clientCapabilities`, `agentCapabilities`, the v2 draft `info` and
//! `capabilities`. v1 gives a session's modes as `modes` (changed by `current_mode_update` and
//! `session/set_mode`); the v2 draft has no modes but a config option of category `mode`
//! (changed by `config_option_update` and `session/set_config_option`), which v1 agents may send
//! too. Both name the commands update `available_commands_update`; v2's session responses may
//! carry `availableCommands` themselves.

use rusqlite::params;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{Reader, SessionRef, answer_to};

/// What a session's peers said about themselves and the session.
#[derive(Debug, Clone, Serialize)]
pub struct SessionInfo {
    /// The client's info as it sent it in `initialize` (`name`, `title`, `version`, ...): v1's
    /// `params.clientInfo`, v2's `params.info`; `None` when it sent none.
    pub client: Option<Value>,
    /// The agent's info from `initialize`'s result: v1's `agentInfo`, v2's `info`.
    pub agent: Option<Value>,
    /// The protocol version each side named in `initialize`.
    pub protocol: ProtocolInfo,
    /// The client's capabilities (`params.clientCapabilities`, v2 `params.capabilities`), each
    /// leaf with its path, in the order sent.
    pub client_capabilities: Vec<Capability>,
    /// The agent's capabilities (`result.agentCapabilities`, v2 `result.capabilities`), each leaf
    /// with its path, in the order sent. Empty when `initialize` failed.
    pub agent_capabilities: Vec<Capability>,
    /// `result.authMethods` as the agent sent them (each with its `id`, `name`, `description`,
    /// ...).
    pub auth_methods: Vec<Value>,
    /// The session's modes as the response that opened it gave them (`session/new`,
    /// `session/load`, `session/resume`, `session/fork`): `{"currentModeId", "availableModes":
    /// [{"id", "name", "description"}]}`. Without `modes` (the v2 draft), made of the response's
    /// config option of category `mode` in that shape (`currentValue`, and each option's `value`
    /// as `id`). `None` when the agent gave neither.
    pub modes: Option<Value>,
    /// The mode the session is in as last said: the latest of a `current_mode_update`, a
    /// `config_option_update` whose `mode` option has a value, and a `session/set_mode` or
    /// `session/set_config_option` (of the mode option) the agent answered with success; else
    /// `modes.currentModeId`.
    pub current_mode: Option<String>,
    /// The agent's slash commands: `availableCommands` of the session's last
    /// `available_commands_update`; without one, of the response that opened the session (v2).
    pub commands: Vec<Value>,
    /// The seq of the `initialize` request read (the first one answered with a result, else the
    /// first one); `None` when the connection has none.
    pub initialize_seq: Option<i64>,
}

/// The protocol version each side named in `initialize`, as JSON (`1`, `2`, or whatever was
/// sent).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProtocolInfo {
    /// The request's `params.protocolVersion`.
    pub client_offered: Option<Value>,
    /// The result's `protocolVersion`; `None` when `initialize` was not answered with a result.
    pub agent_answered: Option<Value>,
}

/// One capability: a leaf of the capabilities object and its path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capability {
    /// The keys to it joined with `.`: `fs.readTextFile`, `promptCapabilities.image`,
    /// `_meta.claudeCode.promptQueueing`.
    pub path: String,
    /// Its value: anything but a non-empty object (an array is a leaf; an empty object, `{}`,
    /// is one too, as `sessionCapabilities.fork: {}` says "supported").
    pub value: Value,
}

/// The info of `session`: what its connection's `initialize` said, and what its own lines say
/// of its modes and commands.
pub fn session_info(reader: &Reader, session: &SessionRef) -> rusqlite::Result<SessionInfo> {
    let mut info = SessionInfo {
        client: None,
        agent: None,
        protocol: ProtocolInfo::default(),
        client_capabilities: Vec::new(),
        agent_capabilities: Vec::new(),
        auth_methods: Vec::new(),
        modes: None,
        current_mode: None,
        commands: Vec::new(),
        initialize_seq: None,
    };
    if let Some((seq, request, result)) = initialize(reader, session.connection_id)? {
        let params = request.get("params").unwrap_or(&Value::Null);
        info.initialize_seq = Some(seq);
        info.client = either(params, "clientInfo", "info").cloned();
        info.protocol.client_offered = present(params.get("protocolVersion"));
        info.client_capabilities =
            capabilities(either(params, "clientCapabilities", "capabilities"));
        if let Some(result) = result {
            info.agent = either(&result, "agentInfo", "info").cloned();
            info.protocol.agent_answered = present(result.get("protocolVersion"));
            info.agent_capabilities =
                capabilities(either(&result, "agentCapabilities", "capabilities"));
            info.auth_methods = result
                .get("authMethods")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
        }
    }
    let opening = opening_result(reader, session)?;
    if let Some(result) = &opening {
        info.modes = match result.get("modes") {
            Some(modes) if modes.is_object() => Some(modes.clone()),
            _ => result
                .get("configOptions")
                .and_then(mode_option)
                .map(modes_of),
        };
        info.commands = commands_of(result).unwrap_or_default();
    }
    let latest = latest_updates(reader, session)?;
    if let Some(commands) = latest.commands {
        info.commands = commands;
    }
    let changed = [latest.mode, latest_mode_request(reader, session)?]
        .into_iter()
        .flatten()
        .max_by_key(|(seq, _)| *seq);
    info.current_mode = changed.map(|(_, mode)| mode).or_else(|| {
        info.modes
            .as_ref()
            .and_then(|m| m.get("currentModeId"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    Ok(info)
}

/// `object[v1]`, else `object[v2]` (a non-null value).
fn either<'v>(object: &'v Value, v1: &str, v2: &str) -> Option<&'v Value> {
    present_ref(object.get(v1)).or_else(|| present_ref(object.get(v2)))
}

fn present_ref(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| !v.is_null())
}

fn present(value: Option<&Value>) -> Option<Value> {
    present_ref(value).cloned()
}

/// A recorded line as JSON: strictly, else as the peers read it (a lone surrogate, `NaN`).
fn parse(raw: &[u8]) -> Option<Value> {
    serde_json::from_slice(raw)
        .ok()
        .or_else(|| crate::protocol::message::decode(raw))
}

/// How many `initialize` requests are looked at for one answered with a result.
const INITIALIZE_TRIES: i64 = 16;

/// The `initialize` request read, its seq, and its result: the first one answered with a
/// result, else the first one (its result `None`).
fn initialize(
    reader: &Reader,
    connection_id: i64,
) -> rusqlite::Result<Option<(i64, Value, Option<Value>)>> {
    let requests: Vec<(i64, Vec<u8>)> = reader
        .conn()
        .prepare_cached(
            "SELECT seq, raw FROM messages
             WHERE connection_id = ?1 AND direction = 'c2a' AND kind = 'request'
               AND method = 'initialize'
             ORDER BY seq LIMIT ?2",
        )?
        .query_map(params![connection_id, INITIALIZE_TRIES], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut first = None;
    for (seq, raw) in requests {
        let request = parse(&raw).unwrap_or(Value::Null);
        let result = answer_to(reader, connection_id, seq)?
            .and_then(|response| parse(&response.raw))
            .and_then(|mut response| match response.get_mut("result") {
                Some(result) if result.is_object() => Some(result.take()),
                _ => None,
            });
        if result.is_some() {
            return Ok(Some((seq, request, result)));
        }
        first.get_or_insert((seq, request, None));
    }
    Ok(first)
}

/// The leaves of a capabilities object, in order, with their paths.
fn capabilities(value: Option<&Value>) -> Vec<Capability> {
    fn walk(path: &mut String, object: &Map<String, Value>, out: &mut Vec<Capability>) {
        for (key, value) in object {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            match value {
                Value::Object(inner) if !inner.is_empty() => walk(path, inner, out),
                leaf => out.push(Capability {
                    path: path.clone(),
                    value: leaf.clone(),
                }),
            }
            path.truncate(len);
        }
    }
    let mut out = Vec::new();
    if let Some(Value::Object(object)) = value {
        walk(&mut String::new(), object, &mut out);
    }
    out
}

/// The result of the response that opened the session (`session/new`, `session/load`,
/// `session/resume`, `session/fork`), the first one with a result.
fn opening_result(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Option<Value>> {
    let mut statement = reader.conn().prepare_cached(
        "SELECT response.raw FROM messages response
         JOIN messages request ON request.connection_id = response.connection_id
                              AND request.seq = response.reply_to_seq
         WHERE response.connection_id = ?1 AND response.kind = 'response'
           AND response.method IN ('session/new', 'session/load', 'session/resume', 'session/fork')
           AND (response.session_id = ?2
                OR (request.session_id = ?2 AND response.method != 'session/fork'))
         ORDER BY response.seq",
    )?;
    let mut rows = statement.query(params![session.connection_id, session.session_id])?;
    while let Some(row) = rows.next()? {
        let raw: Vec<u8> = row.get(0)?;
        let result = parse(&raw).and_then(|mut v| v.get_mut("result").map(Value::take));
        if let Some(result) = result.filter(Value::is_object) {
            // A fork's answer names the new session; its request names the one forked.
            let forked_from_here = result
                .get("sessionId")
                .and_then(Value::as_str)
                .is_some_and(|id| id != session.session_id);
            if !forked_from_here {
                return Ok(Some(result));
            }
        }
    }
    Ok(None)
}

/// `availableCommands` of an object that has them.
fn commands_of(object: &Value) -> Option<Vec<Value>> {
    object
        .get("availableCommands")
        .and_then(Value::as_array)
        .cloned()
}

/// The config option of category `mode` among `options` (a `configOptions` array).
fn mode_option(options: &Value) -> Option<&Value> {
    options
        .as_array()?
        .iter()
        .find(|o| o.get("category").and_then(Value::as_str) == Some("mode"))
}

/// A mode config option as v1's `modes`: `{"currentModeId", "availableModes"}`, each option's
/// `value` as the mode's `id` (the options of every group, when they are grouped).
fn modes_of(option: &Value) -> Value {
    let mut modes = Vec::new();
    for item in option
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let grouped = item.get("options").and_then(Value::as_array);
        for option in grouped.map_or_else(|| vec![item], |g| g.iter().collect()) {
            let mut mode = Map::new();
            mode.insert(
                "id".into(),
                option.get("value").cloned().unwrap_or_default(),
            );
            for key in ["name", "description"] {
                if let Some(v) = present(option.get(key)) {
                    mode.insert(key.into(), v);
                }
            }
            modes.push(Value::Object(mode));
        }
    }
    json!({
        "currentModeId": option.get("currentValue").cloned().unwrap_or_default(),
        "availableModes": modes,
    })
}

/// The current value of the mode option among `options`, as a mode id.
fn mode_value(options: &Value) -> Option<String> {
    mode_option(options)?
        .get("currentValue")?
        .as_str()
        .map(str::to_owned)
}

/// What the session's latest updates say: its commands, and its mode with the seq that said it.
#[derive(Debug, Default)]
struct Latest {
    commands: Option<Vec<Value>>,
    mode: Option<(i64, String)>,
}

/// The session's last `available_commands_update`, and its last `current_mode_update` or
/// `config_option_update` naming a mode: its `session/update` lines read from the last one
/// backwards, only those whose text names one of the three, until both are found.
fn latest_updates(reader: &Reader, session: &SessionRef) -> rusqlite::Result<Latest> {
    let mut statement = reader.conn().prepare_cached(
        "SELECT seq, raw FROM messages
         WHERE connection_id = ?1 AND session_id = ?2 AND direction = 'a2c'
           AND method = 'session/update'
           AND (instr(raw, CAST('available_commands_update' AS BLOB))
                OR instr(raw, CAST('current_mode_update' AS BLOB))
                OR instr(raw, CAST('config_option_update' AS BLOB)))
         ORDER BY seq DESC",
    )?;
    let mut rows = statement.query(params![session.connection_id, session.session_id])?;
    let mut latest = Latest::default();
    while let Some(row) = rows.next()? {
        if latest.commands.is_some() && latest.mode.is_some() {
            break;
        }
        let seq: i64 = row.get(0)?;
        let raw: Vec<u8> = row.get(1)?;
        let Some(message) = parse(&raw) else {
            continue;
        };
        let update = &message["params"]["update"];
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("available_commands_update") if latest.commands.is_none() => {
                latest.commands = commands_of(update);
            }
            Some("current_mode_update") if latest.mode.is_none() => {
                latest.mode = update
                    .get("currentModeId")
                    .and_then(Value::as_str)
                    .map(|mode| (seq, mode.to_owned()));
            }
            Some("config_option_update") if latest.mode.is_none() => {
                latest.mode = update
                    .get("configOptions")
                    .and_then(mode_value)
                    .map(|mode| (seq, mode));
            }
            _ => {}
        }
    }
    Ok(latest)
}

/// The mode the session's last successful `session/set_mode` (its `modeId`) or
/// `session/set_config_option` of the mode option (the mode its answer gives) set, with the seq
/// of the answer.
fn latest_mode_request(
    reader: &Reader,
    session: &SessionRef,
) -> rusqlite::Result<Option<(i64, String)>> {
    let requests: Vec<(i64, String, Vec<u8>)> = reader
        .conn()
        .prepare_cached(
            "SELECT seq, method, raw FROM messages
             WHERE connection_id = ?1 AND session_id = ?2 AND direction = 'c2a'
               AND kind = 'request'
               AND method IN ('session/set_mode', 'session/set_config_option')
             ORDER BY seq DESC",
        )?
        .query_map(params![session.connection_id, session.session_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    for (seq, method, raw) in requests {
        let Some(response) = answer_to(reader, session.connection_id, seq)? else {
            continue;
        };
        let Some(answer) = parse(&response.raw) else {
            continue;
        };
        // A success: a result (even `null`) and no error.
        let (Some(result), None) = (answer.get("result"), answer.get("error")) else {
            continue;
        };
        let mode = if method == "session/set_mode" {
            parse(&raw).and_then(|r| r["params"]["modeId"].as_str().map(str::to_owned))
        } else {
            result.get("configOptions").and_then(mode_value)
        };
        if let Some(mode) = mode {
            return Ok(Some((response.seq, mode)));
        }
    }
    Ok(None)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    use crate::query::testing::imported;

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    /// The info of the first session of a transcript.
    fn info_of(transcript: &str) -> SessionInfo {
        let (_dir, reader, connection_id) = imported(transcript);
        let session_id =
            crate::query::announced_sessions(&reader, connection_id).unwrap()[0].clone();
        session_info(
            &reader,
            &SessionRef {
                connection_id,
                session_id,
            },
        )
        .unwrap()
    }

    fn paths(capabilities: &[Capability]) -> Vec<(&str, &Value)> {
        capabilities
            .iter()
            .map(|c| (c.path.as_str(), &c.value))
            .collect()
    }

    fn names(values: &[Value], key: &str) -> Vec<String> {
        values
            .iter()
            .map(|v| v[key].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn claude_says_who_it_is_its_capabilities_modes_and_commands() {
        let info = info_of(&fixture("claude-acpx-basic-approve-all.jsonl"));
        assert_eq!(info.initialize_seq, Some(0));
        assert_eq!(
            info.client,
            Some(json!({"name": "acpx", "version": "0.19.1"}))
        );
        assert_eq!(
            info.agent,
            Some(
                json!({"name": "@zed-industries/claude-agent-acp", "title": "Claude Agent", "version": "0.23.1"})
            )
        );
        assert_eq!(
            (info.protocol.client_offered, info.protocol.agent_answered),
            (Some(json!(1)), Some(json!(1)))
        );
        let t = json!(true);
        assert_eq!(
            paths(&info.client_capabilities),
            [
                ("fs.readTextFile", &t),
                ("fs.writeTextFile", &t),
                ("terminal", &t)
            ]
        );
        // In the order sent (not sorted), empty objects as leaves.
        let empty = json!({});
        assert_eq!(
            paths(&info.agent_capabilities),
            [
                ("_meta.claudeCode.promptQueueing", &t),
                ("promptCapabilities.image", &t),
                ("promptCapabilities.embeddedContext", &t),
                ("mcpCapabilities.http", &t),
                ("mcpCapabilities.sse", &t),
                ("loadSession", &t),
                ("sessionCapabilities.fork", &empty),
                ("sessionCapabilities.list", &empty),
                ("sessionCapabilities.resume", &empty),
                ("sessionCapabilities.close", &empty),
            ]
        );
        assert!(info.auth_methods.is_empty());
        let modes = info.modes.unwrap();
        assert_eq!(modes["currentModeId"], "default");
        assert_eq!(
            names(modes["availableModes"].as_array().unwrap(), "id"),
            [
                "default",
                "acceptEdits",
                "plan",
                "dontAsk",
                "bypassPermissions"
            ]
        );
        assert_eq!(info.current_mode.as_deref(), Some("default"));
        let commands = names(&info.commands, "name");
        assert_eq!(commands.len(), 14, "{commands:?}");
        assert_eq!(&commands[..3], ["update-config", "debug", "simplify"]);
        let json = serde_json::to_value(&info.commands[1]).unwrap();
        assert_eq!(json["input"], json!({"hint": "[issue description]"}));
    }

    #[test]
    fn codex_has_auth_methods_no_modes_and_commands_sent_mid_turn() {
        let info = info_of(&fixture("codex-acpx-basic-approve-all.jsonl"));
        assert_eq!(info.agent.as_ref().unwrap()["name"], "codex-acp");
        assert_eq!(info.agent.as_ref().unwrap()["version"], "0.16.0");
        assert_eq!(
            names(&info.auth_methods, "id"),
            ["chatgpt", "codex-api-key", "openai-api-key"]
        );
        assert_eq!(
            info.auth_methods[1]["vars"],
            json!([{"name": "CODEX_API_KEY"}])
        );
        assert!(
            paths(&info.agent_capabilities).contains(&("auth.logout", &json!({}))),
            "{:?}",
            info.agent_capabilities
        );
        assert!(
            paths(&info.agent_capabilities).contains(&("promptCapabilities.audio", &json!(false)))
        );
        // Its config options are a model and a reasoning effort: no mode.
        assert_eq!((info.modes, info.current_mode), (None, None));
        assert_eq!(
            names(&info.commands, "name"),
            [
                "review",
                "review-branch",
                "review-commit",
                "init",
                "compact",
                "logout"
            ]
        );
    }

    #[test]
    fn gemini_has_modes_and_auth_methods_with_meta() {
        let info = info_of(&fixture("gemini-acpx-basic-approve-all.jsonl"));
        assert_eq!(info.agent.as_ref().unwrap()["title"], "Gemini CLI");
        assert_eq!(
            names(&info.auth_methods, "id"),
            ["oauth-personal", "gemini-api-key", "vertex-ai", "gateway"]
        );
        assert_eq!(
            info.auth_methods[1]["_meta"],
            json!({"api-key": {"provider": "google"}})
        );
        let modes = info.modes.unwrap();
        assert_eq!(
            names(modes["availableModes"].as_array().unwrap(), "id"),
            ["default", "autoEdit", "yolo", "plan"]
        );
        assert_eq!(info.current_mode.as_deref(), Some("default"));
        let commands = names(&info.commands, "name");
        assert_eq!(commands[..2], ["memory", "memory show"]);
    }

    #[test]
    fn v2_names_info_and_capabilities_differently_and_keeps_modes_in_config_options() {
        // The recorded v2 fixtures name the peers' info the v1 way.
        let info = info_of(&fixture("v2_views/v2-session.jsonl"));
        assert_eq!(
            info.client,
            Some(json!({"name": "v2-client", "version": "1.0"}))
        );
        assert_eq!(
            info.agent,
            Some(json!({"name": "v2-agent", "version": "0.2"}))
        );
        assert_eq!(info.protocol.agent_answered, Some(json!(2)));
        assert_eq!(
            paths(&info.client_capabilities),
            [("elicitation.form", &json!({}))]
        );
        assert!(info.agent_capabilities.is_empty());
        assert_eq!((&info.modes, &info.current_mode), (&None, &None));

        // The draft's own names (`info`, `capabilities`), a mode config option in the session's
        // answer, its commands there, and the mode changed by an update and by a request.
        let mode_option = |current: &str| {
            json!([{"id": "mode", "name": "Mode", "category": "mode", "type": "select",
                    "currentValue": current,
                    "options": [{"value": "ask", "name": "Ask"},
                                {"value": "code", "name": "Code", "description": "Writes"}]}])
        };
        let lines = [
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": 2, "info": {"name": "zed", "version": "1"},
                "capabilities": {"auth": {"terminal": true}}}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": 2, "info": {"name": "agent", "version": "2"},
                "capabilities": {"sessionCapabilities": {"resume": {}}},
                "authMethods": [{"id": "login", "name": "Log in"}]}}),
            ),
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                "params": {"cwd": "/p", "mcpServers": []}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s",
                "configOptions": mode_option("ask"),
                "availableCommands": [{"name": "plan", "description": "Plan"}]}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                "update": {"sessionUpdate": "config_option_update", "configOptions": mode_option("code")}}}),
            ),
        ];
        let info = info_of(&crate::query::testing::transcript_in_seconds(&lines));
        assert_eq!(info.client, Some(json!({"name": "zed", "version": "1"})));
        assert_eq!(info.agent, Some(json!({"name": "agent", "version": "2"})));
        assert_eq!(
            paths(&info.client_capabilities),
            [("auth.terminal", &json!(true))]
        );
        assert_eq!(
            paths(&info.agent_capabilities),
            [("sessionCapabilities.resume", &json!({}))]
        );
        assert_eq!(names(&info.auth_methods, "id"), ["login"]);
        assert_eq!(
            info.modes,
            Some(json!({"currentModeId": "ask", "availableModes": [
                {"id": "ask", "name": "Ask"},
                {"id": "code", "name": "Code", "description": "Writes"}]}))
        );
        assert_eq!(info.current_mode.as_deref(), Some("code"));
        assert_eq!(names(&info.commands, "name"), ["plan"]);

        // A set_config_option answered after the update sets it back; one answered with an
        // error does not.
        let mut more = lines.to_vec();
        more.extend([
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 2, "method": "session/set_config_option",
                "params": {"sessionId": "s", "configId": "mode", "value": "ask"}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 2, "result": {"configOptions": mode_option("ask")}}),
            ),
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_config_option",
                "params": {"sessionId": "s", "configId": "mode", "value": "code"}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "no"}}),
            ),
        ]);
        assert_eq!(
            info_of(&crate::query::testing::transcript_in_seconds(&more))
                .current_mode
                .as_deref(),
            Some("ask")
        );
    }

    #[test]
    fn v1_mode_changes_and_a_failed_initialize() {
        let lines = [
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false}}}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32603, "message": "busy"}}),
            ),
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true}},
                "clientInfo": {"name": "again"}}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1,
                "agentCapabilities": {"loadSession": false}}}),
            ),
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                "params": {"cwd": "/p", "mcpServers": []}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s",
                "modes": {"currentModeId": "ask", "availableModes": [
                    {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]}}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                "update": {"sessionUpdate": "current_mode_update", "currentModeId": "code"}}}),
            ),
            (
                "a2c",
                json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s",
                "update": {"sessionUpdate": "agent_message_chunk",
                           "content": {"type": "text", "text": "current_mode_update"}}}}),
            ),
        ];
        let info = info_of(&crate::query::testing::transcript_in_seconds(&lines));
        // The first initialize answered with a result.
        assert_eq!(info.initialize_seq, Some(2));
        assert_eq!(info.client, Some(json!({"name": "again"})));
        assert_eq!(info.agent, None);
        assert_eq!(
            paths(&info.client_capabilities),
            [("fs.readTextFile", &json!(true))]
        );
        assert_eq!(
            paths(&info.agent_capabilities),
            [("loadSession", &json!(false))]
        );
        // A chunk that only mentions the update's name is not one.
        assert_eq!(info.current_mode.as_deref(), Some("code"));
        assert!(info.commands.is_empty());

        let mut more = lines.to_vec();
        more.extend([
            (
                "c2a",
                json!({"jsonrpc": "2.0", "id": 3, "method": "session/set_mode",
                "params": {"sessionId": "s", "modeId": "ask"}}),
            ),
            ("a2c", json!({"jsonrpc": "2.0", "id": 3, "result": {}})),
        ]);
        assert_eq!(
            info_of(&crate::query::testing::transcript_in_seconds(&more))
                .current_mode
                .as_deref(),
            Some("ask")
        );

        // Only a failed initialize: the client's side of it.
        let failed = info_of(&crate::query::testing::transcript_in_seconds(&[
            lines[0].clone(),
            lines[1].clone(),
            lines[4].clone(),
            lines[5].clone(),
        ]));
        assert_eq!(failed.initialize_seq, Some(0));
        assert_eq!(failed.protocol.client_offered, Some(json!(1)));
        assert_eq!(failed.protocol.agent_answered, None);
        assert_eq!(
            paths(&failed.client_capabilities),
            [("fs.readTextFile", &json!(false))]
        );
        assert!(failed.agent_capabilities.is_empty());
        assert_eq!(failed.current_mode.as_deref(), Some("ask"));
    }
}
