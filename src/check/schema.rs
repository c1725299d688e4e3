//! Messages against the protocol's types with the official crate
//! (`agent-client-protocol-schema`): version 1, and of the version 2 draft the methods the crate
//! types there. A message matches when the type its method names can be read from it, as a peer
//! built on the SDKs would read it. (The types accept unknown fields, as the protocol does; a
//! missing or mistyped required field is what fails.)

use agent_client_protocol_schema::v1 as acp;
use agent_client_protocol_schema::v2;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn read<T: DeserializeOwned>(value: &Value, what: &str) -> Result<(), String> {
    // `params` may be absent where every field is optional: read it as an empty object.
    let value = if value.is_null() {
        &Value::Object(Default::default())
    } else {
        value
    };
    T::deserialize(value)
        .map(|_| ())
        .map_err(|e| format!("{what} does not match the schema: {e}"))
}

/// The params of a request or notification with this method; `None` for a method the schema
/// does not type here.
pub(super) fn params(method: &str, params: &Value) -> Option<Result<(), String>> {
    let what = format!("the params of `{method}`");
    Some(match method {
        "initialize" => read::<acp::InitializeRequest>(params, &what),
        "authenticate" => read::<acp::AuthenticateRequest>(params, &what),
        "session/new" => read::<acp::NewSessionRequest>(params, &what),
        "session/load" => read::<acp::LoadSessionRequest>(params, &what),
        "session/list" => read::<acp::ListSessionsRequest>(params, &what),
        "session/set_mode" => read::<acp::SetSessionModeRequest>(params, &what),
        "session/set_config_option" => read::<acp::SetSessionConfigOptionRequest>(params, &what),
        "session/prompt" => read::<acp::PromptRequest>(params, &what),
        "session/cancel" => read::<acp::CancelNotification>(params, &what),
        "session/update" => read::<acp::SessionNotification>(params, &what),
        "session/request_permission" => read::<acp::RequestPermissionRequest>(params, &what),
        "fs/read_text_file" => read::<acp::ReadTextFileRequest>(params, &what),
        "fs/write_text_file" => read::<acp::WriteTextFileRequest>(params, &what),
        "terminal/create" => read::<acp::CreateTerminalRequest>(params, &what),
        "terminal/output" => read::<acp::TerminalOutputRequest>(params, &what),
        "terminal/release" => read::<acp::ReleaseTerminalRequest>(params, &what),
        "terminal/wait_for_exit" => read::<acp::WaitForTerminalExitRequest>(params, &what),
        "terminal/kill" => read::<acp::KillTerminalRequest>(params, &what),
        _ => return None,
    })
}

/// The result of a successful response to a request with this method.
pub(super) fn result(method: &str, result: &Value) -> Option<Result<(), String>> {
    let what = format!("the result of `{method}`");
    Some(match method {
        "initialize" => read::<acp::InitializeResponse>(result, &what),
        "authenticate" => read::<acp::AuthenticateResponse>(result, &what),
        "session/new" => read::<acp::NewSessionResponse>(result, &what),
        "session/load" => read::<acp::LoadSessionResponse>(result, &what),
        "session/list" => read::<acp::ListSessionsResponse>(result, &what),
        "session/set_mode" => read::<acp::SetSessionModeResponse>(result, &what),
        "session/set_config_option" => read::<acp::SetSessionConfigOptionResponse>(result, &what),
        "session/prompt" => read::<acp::PromptResponse>(result, &what),
        "session/request_permission" => read::<acp::RequestPermissionResponse>(result, &what),
        "fs/read_text_file" => read::<acp::ReadTextFileResponse>(result, &what),
        "fs/write_text_file" => read::<acp::WriteTextFileResponse>(result, &what),
        "terminal/create" => read::<acp::CreateTerminalResponse>(result, &what),
        "terminal/output" => read::<acp::TerminalOutputResponse>(result, &what),
        "terminal/release" => read::<acp::ReleaseTerminalResponse>(result, &what),
        "terminal/wait_for_exit" => read::<acp::WaitForTerminalExitResponse>(result, &what),
        "terminal/kill" => read::<acp::KillTerminalResponse>(result, &what),
        _ => return None,
    })
}

/// The error of a failed response.
pub(super) fn error(error: &Value) -> Option<Result<(), String>> {
    Some(read::<acp::Error>(error, "the error"))
}

/// The params of a request or notification with this method, in the version 2 draft.
pub(super) fn params_v2(method: &str, params: &Value) -> Option<Result<(), String>> {
    let what = format!("the params of `{method}` (protocol v2 draft)");
    Some(match method {
        "initialize" => read::<v2::InitializeRequest>(params, &what),
        "session/new" => read::<v2::NewSessionRequest>(params, &what),
        "session/list" => read::<v2::ListSessionsRequest>(params, &what),
        "session/set_config_option" => read::<v2::SetSessionConfigOptionRequest>(params, &what),
        "session/prompt" => read::<v2::PromptRequest>(params, &what),
        "session/update" => read::<v2::UpdateSessionNotification>(params, &what),
        "session/request_permission" => read::<v2::RequestPermissionRequest>(params, &what),
        _ => return None,
    })
}

/// The result of a successful response, in the version 2 draft.
pub(super) fn result_v2(method: &str, result: &Value) -> Option<Result<(), String>> {
    let what = format!("the result of `{method}` (protocol v2 draft)");
    Some(match method {
        "initialize" => read::<v2::InitializeResponse>(result, &what),
        "session/new" => read::<v2::NewSessionResponse>(result, &what),
        "session/list" => read::<v2::ListSessionsResponse>(result, &what),
        "session/set_config_option" => read::<v2::SetSessionConfigOptionResponse>(result, &what),
        "session/prompt" => read::<v2::PromptResponse>(result, &what),
        "session/request_permission" => read::<v2::RequestPermissionResponse>(result, &what),
        _ => return None,
    })
}

/// The error of a failed response, in the version 2 draft.
pub(super) fn error_v2(error: &Value) -> Option<Result<(), String>> {
    Some(read::<v2::Error>(error, "the error (protocol v2 draft)"))
}
