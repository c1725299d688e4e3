//! Messages against the protocol's types with the official crate
//! (`agent-client-protocol-schema`, with its `unstable` and `unstable_protocol_v2` features):
//! every method of version 1 and of the version 2 draft, each with that version's own types. A
//! message matches when the type its method names can be read from it, as a peer built on the
//! SDKs would read it. (The types accept unknown fields, as the protocol does; a missing or
//! mistyped required field is what fails.)
//!
//! Which methods a version has, and who sends them, is `protocol::version::sender_of`; this file
//! only names the types. A method of the other version is not typed here (`None`): the caller
//! reports it as `acp/wrong-version` before it gets here.

use agent_client_protocol_schema::v1;
use agent_client_protocol_schema::v2;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::protocol::Version;

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

/// The params of a request (`is_request`) or notification with this method, with the types of
/// `version` (v1 for anything but the v2 draft); `None` for a method that version does not type.
pub(super) fn params(
    version: Version,
    method: &str,
    params: &Value,
    is_request: bool,
) -> Option<Result<(), String>> {
    if version.is_v2() {
        params_v2(method, params, is_request)
    } else {
        params_v1(method, params, is_request)
    }
}

/// The result of a successful response to a request with this method.
pub(super) fn result(version: Version, method: &str, result: &Value) -> Option<Result<(), String>> {
    if version.is_v2() {
        result_v2(method, result)
    } else {
        result_v1(method, result)
    }
}

/// The error of a failed response.
pub(super) fn error(version: Version, error: &Value) -> Option<Result<(), String>> {
    Some(if version.is_v2() {
        read::<v2::Error>(error, "the error (protocol v2 draft)")
    } else {
        read::<v1::Error>(error, "the error")
    })
}

fn params_v1(method: &str, params: &Value, is_request: bool) -> Option<Result<(), String>> {
    let what = format!("the params of `{method}`");
    let what = what.as_str();
    Some(match method {
        // The client's requests and notifications.
        "initialize" => read::<v1::InitializeRequest>(params, what),
        "authenticate" => read::<v1::AuthenticateRequest>(params, what),
        "logout" => read::<v1::LogoutRequest>(params, what),
        "auth/status" => read::<v1::AuthStatusRequest>(params, what),
        "providers/list" => read::<v1::ListProvidersRequest>(params, what),
        "providers/set" => read::<v1::SetProviderRequest>(params, what),
        "providers/disable" => read::<v1::DisableProviderRequest>(params, what),
        "session/new" => read::<v1::NewSessionRequest>(params, what),
        "session/load" => read::<v1::LoadSessionRequest>(params, what),
        "session/list" => read::<v1::ListSessionsRequest>(params, what),
        "session/delete" => read::<v1::DeleteSessionRequest>(params, what),
        "session/fork" => read::<v1::ForkSessionRequest>(params, what),
        "session/archive" => read::<v1::ArchiveSessionRequest>(params, what),
        "session/unarchive" => read::<v1::UnarchiveSessionRequest>(params, what),
        "session/status" => read::<v1::SessionStatusRequest>(params, what),
        "session/options" => read::<v1::SessionOptionsRequest>(params, what),
        "session/set_title" => read::<v1::SetSessionTitleRequest>(params, what),
        "session/resume" => read::<v1::ResumeSessionRequest>(params, what),
        "session/close" => read::<v1::CloseSessionRequest>(params, what),
        "session/set_mode" => read::<v1::SetSessionModeRequest>(params, what),
        "session/set_config_option" => read::<v1::SetSessionConfigOptionRequest>(params, what),
        "session/prompt" => read::<v1::PromptRequest>(params, what),
        "session/cancel" => read::<v1::CancelNotification>(params, what),
        // The agent's.
        "session/update" => read::<v1::SessionNotification>(params, what),
        "session/request_permission" => read::<v1::RequestPermissionRequest>(params, what),
        "fs/read_text_file" => read::<v1::ReadTextFileRequest>(params, what),
        "fs/write_text_file" => read::<v1::WriteTextFileRequest>(params, what),
        "terminal/create" => read::<v1::CreateTerminalRequest>(params, what),
        "terminal/output" => read::<v1::TerminalOutputRequest>(params, what),
        "terminal/release" => read::<v1::ReleaseTerminalRequest>(params, what),
        "terminal/wait_for_exit" => read::<v1::WaitForTerminalExitRequest>(params, what),
        "terminal/kill" => read::<v1::KillTerminalRequest>(params, what),
        "elicitation/create" => read::<v1::CreateElicitationRequest>(params, what),
        "elicitation/complete" => read::<v1::CompleteElicitationNotification>(params, what),
        "auth/status_update" => read::<v1::AuthStatusUpdateNotification>(params, what),
        // Either side's.
        "mcp/message" if is_request => read::<v1::MessageMcpRequest>(params, what),
        "mcp/message" => read::<v1::MessageMcpNotification>(params, what),
        "$/cancel_request" => read::<v1::CancelRequestNotification>(params, what),
        "proxy/initialize" => read::<v1::InitializeProxyRequest>(params, what),
        "proxy/successor" if is_request => read::<v1::ProxySuccessorRequest>(params, what),
        "proxy/successor" => read::<v1::ProxySuccessorNotification>(params, what),
        _ => return None,
    })
}

fn result_v1(method: &str, result: &Value) -> Option<Result<(), String>> {
    let what = format!("the result of `{method}`");
    let what = what.as_str();
    Some(match method {
        "initialize" => read::<v1::InitializeResponse>(result, what),
        "authenticate" => read::<v1::AuthenticateResponse>(result, what),
        "logout" => read::<v1::LogoutResponse>(result, what),
        "auth/status" => read::<v1::AuthStatusResponse>(result, what),
        "providers/list" => read::<v1::ListProvidersResponse>(result, what),
        "providers/set" => read::<v1::SetProviderResponse>(result, what),
        "providers/disable" => read::<v1::DisableProviderResponse>(result, what),
        "session/new" => read::<v1::NewSessionResponse>(result, what),
        "session/load" => read::<v1::LoadSessionResponse>(result, what),
        "session/list" => read::<v1::ListSessionsResponse>(result, what),
        "session/delete" => read::<v1::DeleteSessionResponse>(result, what),
        "session/fork" => read::<v1::ForkSessionResponse>(result, what),
        "session/archive" => read::<v1::ArchiveSessionResponse>(result, what),
        "session/unarchive" => read::<v1::UnarchiveSessionResponse>(result, what),
        "session/status" => read::<v1::SessionStatusResponse>(result, what),
        "session/options" => read::<v1::SessionOptionsResponse>(result, what),
        "session/set_title" => read::<v1::SetSessionTitleResponse>(result, what),
        "session/resume" => read::<v1::ResumeSessionResponse>(result, what),
        "session/close" => read::<v1::CloseSessionResponse>(result, what),
        "session/set_mode" => read::<v1::SetSessionModeResponse>(result, what),
        "session/set_config_option" => read::<v1::SetSessionConfigOptionResponse>(result, what),
        "session/prompt" => read::<v1::PromptResponse>(result, what),
        "session/request_permission" => read::<v1::RequestPermissionResponse>(result, what),
        "fs/read_text_file" => read::<v1::ReadTextFileResponse>(result, what),
        "fs/write_text_file" => read::<v1::WriteTextFileResponse>(result, what),
        "terminal/create" => read::<v1::CreateTerminalResponse>(result, what),
        "terminal/output" => read::<v1::TerminalOutputResponse>(result, what),
        "terminal/release" => read::<v1::ReleaseTerminalResponse>(result, what),
        "terminal/wait_for_exit" => read::<v1::WaitForTerminalExitResponse>(result, what),
        "terminal/kill" => read::<v1::KillTerminalResponse>(result, what),
        "elicitation/create" => read::<v1::CreateElicitationResponse>(result, what),
        "mcp/message" => read::<v1::MessageMcpResponse>(result, what),
        "proxy/initialize" => read::<v1::InitializeProxyResponse>(result, what),
        "proxy/successor" => read::<v1::ProxySuccessorResponse>(result, what),
        _ => return None,
    })
}

fn params_v2(method: &str, params: &Value, is_request: bool) -> Option<Result<(), String>> {
    let what = format!("the params of `{method}` (protocol v2 draft)");
    let what = what.as_str();
    Some(match method {
        // The client's requests and notifications.
        "initialize" => read::<v2::InitializeRequest>(params, what),
        "auth/login" => read::<v2::LoginAuthRequest>(params, what),
        "auth/logout" => read::<v2::LogoutAuthRequest>(params, what),
        "auth/status" => read::<v2::AuthStatusRequest>(params, what),
        "providers/list" => read::<v2::ListProvidersRequest>(params, what),
        "providers/set" => read::<v2::SetProviderRequest>(params, what),
        "providers/disable" => read::<v2::DisableProviderRequest>(params, what),
        "session/new" => read::<v2::NewSessionRequest>(params, what),
        "session/list" => read::<v2::ListSessionsRequest>(params, what),
        "session/delete" => read::<v2::DeleteSessionRequest>(params, what),
        "session/fork" => read::<v2::ForkSessionRequest>(params, what),
        "session/archive" => read::<v2::ArchiveSessionRequest>(params, what),
        "session/unarchive" => read::<v2::UnarchiveSessionRequest>(params, what),
        "session/status" => read::<v2::SessionStatusRequest>(params, what),
        "session/options" => read::<v2::SessionOptionsRequest>(params, what),
        "session/set_title" => read::<v2::SetSessionTitleRequest>(params, what),
        "session/resume" => read::<v2::ResumeSessionRequest>(params, what),
        "session/close" => read::<v2::CloseSessionRequest>(params, what),
        "session/set_config_option" => read::<v2::SetSessionConfigOptionRequest>(params, what),
        "session/prompt" => read::<v2::PromptRequest>(params, what),
        "session/cancel" => read::<v2::CancelSessionNotification>(params, what),
        "tool_call/cancel" => read::<v2::CancelToolCallRequest>(params, what),
        "terminal/cancel" => read::<v2::CancelTerminalRequest>(params, what),
        // The agent's.
        "session/update" => read::<v2::UpdateSessionNotification>(params, what)
            .map_err(|error| update_v2(&params["update"]).unwrap_or(error)),
        "session/request_permission" => read::<v2::RequestPermissionRequest>(params, what),
        "elicitation/create" => read::<v2::CreateElicitationRequest>(params, what),
        "elicitation/complete" => read::<v2::CompleteElicitationNotification>(params, what),
        "auth/status_update" => read::<v2::AuthStatusUpdateNotification>(params, what),
        // Either side's.
        "mcp/message" if is_request => read::<v2::MessageMcpRequest>(params, what),
        "mcp/message" => read::<v2::MessageMcpNotification>(params, what),
        "$/cancel_request" => read::<v2::CancelRequestNotification>(params, what),
        "proxy/initialize" => read::<v2::InitializeProxyRequest>(params, what),
        "proxy/successor" if is_request => read::<v2::ProxySuccessorRequest>(params, what),
        "proxy/successor" => read::<v2::ProxySuccessorNotification>(params, what),
        _ => return None,
    })
}

/// Why a v2 update of a known kind does not match. v2's `SessionUpdate` keeps an unknown kind
/// as a future one (an untagged last variant), so serde can only say that no variant matched;
/// reading the update as its kind's own type names the field.
fn update_v2(update: &Value) -> Option<String> {
    let kind = update["sessionUpdate"].as_str()?;
    let what = format!("the `{kind}` update of `session/update` (protocol v2 draft)");
    let what = what.as_str();
    match kind {
        "user_message_chunk" | "agent_message_chunk" | "agent_thought_chunk" => {
            read::<v2::ContentChunk>(update, what)
        }
        "user_message" => read::<v2::UserMessage>(update, what),
        "agent_message" => read::<v2::AgentMessage>(update, what),
        "agent_thought" => read::<v2::AgentThought>(update, what),
        "state_update" => read::<v2::StateUpdate>(update, what),
        "tool_call_content_chunk" => read::<v2::ToolCallContentChunk>(update, what),
        "tool_call_update" => read::<v2::ToolCallUpdate>(update, what),
        "terminal_update" => read::<v2::TerminalUpdate>(update, what),
        "terminal_output_chunk" => read::<v2::TerminalOutputChunk>(update, what),
        "plan_update" => read::<v2::PlanUpdate>(update, what),
        "available_commands_update" => read::<v2::AvailableCommandsUpdate>(update, what),
        "config_option_update" => read::<v2::ConfigOptionUpdate>(update, what),
        "session_info_update" => read::<v2::SessionInfoUpdate>(update, what),
        "usage_update" => read::<v2::UsageUpdate>(update, what),
        _ => return None,
    }
    .err()
}

fn result_v2(method: &str, result: &Value) -> Option<Result<(), String>> {
    let what = format!("the result of `{method}` (protocol v2 draft)");
    let what = what.as_str();
    Some(match method {
        "initialize" => read::<v2::InitializeResponse>(result, what),
        "auth/login" => read::<v2::LoginAuthResponse>(result, what),
        "auth/logout" => read::<v2::LogoutAuthResponse>(result, what),
        "auth/status" => read::<v2::AuthStatusResponse>(result, what),
        "providers/list" => read::<v2::ListProvidersResponse>(result, what),
        "providers/set" => read::<v2::SetProviderResponse>(result, what),
        "providers/disable" => read::<v2::DisableProviderResponse>(result, what),
        "session/new" => read::<v2::NewSessionResponse>(result, what),
        "session/list" => read::<v2::ListSessionsResponse>(result, what),
        "session/delete" => read::<v2::DeleteSessionResponse>(result, what),
        "session/fork" => read::<v2::ForkSessionResponse>(result, what),
        "session/archive" => read::<v2::ArchiveSessionResponse>(result, what),
        "session/unarchive" => read::<v2::UnarchiveSessionResponse>(result, what),
        "session/status" => read::<v2::SessionStatusResponse>(result, what),
        "session/options" => read::<v2::SessionOptionsResponse>(result, what),
        "session/set_title" => read::<v2::SetSessionTitleResponse>(result, what),
        "session/resume" => read::<v2::ResumeSessionResponse>(result, what),
        "session/close" => read::<v2::CloseSessionResponse>(result, what),
        "session/set_config_option" => read::<v2::SetSessionConfigOptionResponse>(result, what),
        "session/prompt" => read::<v2::PromptResponse>(result, what),
        "tool_call/cancel" => read::<v2::CancelToolCallResponse>(result, what),
        "terminal/cancel" => read::<v2::CancelTerminalResponse>(result, what),
        "session/request_permission" => read::<v2::RequestPermissionResponse>(result, what),
        "elicitation/create" => read::<v2::CreateElicitationResponse>(result, what),
        "mcp/message" => read::<v2::MessageMcpResponse>(result, what),
        "proxy/initialize" => read::<v2::InitializeProxyResponse>(result, what),
        "proxy/successor" => read::<v2::ProxySuccessorResponse>(result, what),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::version::sender_of;

    /// Every method name either version's table knows (`protocol::version::sender_of`).
    const METHODS: &[&str] = &[
        "initialize",
        "authenticate",
        "logout",
        "auth/login",
        "auth/logout",
        "auth/status",
        "auth/status_update",
        "providers/list",
        "providers/set",
        "providers/disable",
        "session/new",
        "session/load",
        "session/list",
        "session/delete",
        "session/fork",
        "session/archive",
        "session/unarchive",
        "session/status",
        "session/options",
        "session/set_title",
        "session/resume",
        "session/close",
        "session/set_mode",
        "session/set_model",
        "session/set_config_option",
        "session/prompt",
        "session/cancel",
        "session/update",
        "session/request_permission",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/release",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/cancel",
        "tool_call/cancel",
        "elicitation/create",
        "elicitation/complete",
        "mcp/message",
        "$/cancel_request",
        "proxy/initialize",
        "proxy/successor",
    ];

    /// Notifications: no result to type.
    const NOTIFICATIONS: &[&str] = &[
        "session/cancel",
        "session/update",
        "elicitation/complete",
        "auth/status_update",
        "$/cancel_request",
    ];

    #[test]
    fn every_method_of_each_version_is_typed_by_that_version_only() {
        for version in [Version::V1, Version::V2] {
            for method in METHODS {
                let defined = sender_of(version, method).is_some();
                // `session/set_model` is in v1 (the SDKs send it) but not in the crate's types.
                let typed = defined && *method != "session/set_model";
                let null = Value::Null;
                assert_eq!(
                    params(version, method, &null, true).is_some(),
                    typed,
                    "{version} params of {method}"
                );
                assert_eq!(
                    result(version, method, &null).is_some(),
                    typed && !NOTIFICATIONS.contains(method),
                    "{version} result of {method}"
                );
            }
        }
    }

    #[test]
    fn a_v2_permission_request_needs_a_title_and_v1_a_tool_call() {
        let v2_shape = serde_json::json!({"sessionId": "s", "title": "Run ls",
            "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}]});
        assert!(matches!(
            params(Version::V2, "session/request_permission", &v2_shape, true),
            Some(Ok(()))
        ));
        assert!(matches!(
            params(Version::V1, "session/request_permission", &v2_shape, true),
            Some(Err(_))
        ));
        let mut untitled = v2_shape.clone();
        untitled.as_object_mut().unwrap().remove("title");
        let Some(Err(error)) = params(Version::V2, "session/request_permission", &untitled, true)
        else {
            panic!("a v2 permission request without a title was read");
        };
        assert!(error.contains("title") && error.contains("v2"), "{error}");
    }

    #[test]
    fn a_v2_update_that_does_not_match_names_its_field() {
        let chunk = serde_json::json!({"sessionId": "s", "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}});
        let Some(Err(error)) = params(Version::V2, "session/update", &chunk, false) else {
            panic!("a v2 chunk without a messageId was read");
        };
        assert!(
            error.contains("agent_message_chunk") && error.contains("messageId"),
            "{error}"
        );
        // The same chunk is v1's shape.
        assert!(matches!(
            params(Version::V1, "session/update", &chunk, false),
            Some(Ok(()))
        ));
    }

    #[test]
    fn mcp_message_is_typed_as_a_request_or_a_notification() {
        let message = serde_json::json!({"serverId": "srv", "requestId": "r1",
            "method": "tools/list"});
        for version in [Version::V1, Version::V2] {
            assert!(matches!(
                params(version, "mcp/message", &message, true),
                Some(Ok(()))
            ));
            assert!(matches!(
                params(version, "mcp/message", &message, false),
                Some(Ok(()))
            ));
            assert!(matches!(
                params(version, "mcp/message", &serde_json::json!({}), false),
                Some(Err(_))
            ));
        }
    }
}
