//! What acptap learns from the recordings: the requests the user answered, read as a policy
//! reads them, and the policy they suggest (`policy::suggest`). The one place that joins the
//! read side and the policy, for `acptap policy suggest`, the MCP tool and the UI page.

use std::path::Path;

use crate::policy::Context;
pub(crate) use crate::policy::suggest::Suggestion;
use crate::policy::suggest::{PastDecision, suggest};
use crate::query::{AnsweredFilter, QueryError, Reader, RecordedPermission, answered_by_user};

/// The policy the user's answers suggest: the allows `filter` keeps, checked against every
/// refusal whatever the filter says (a rule applies to every session); `home` is `${home}`.
pub(crate) fn suggestion(
    reader: &Reader,
    filter: &AnsweredFilter,
    min_evidence: usize,
    home: Option<&Path>,
) -> Result<Suggestion, QueryError> {
    let answered = answered_by_user(reader, filter)?;
    Ok(suggest(&past_decisions(answered), min_evidence, home))
}

/// The answered requests as `policy suggest` reads them.
fn past_decisions(recorded: Vec<(RecordedPermission, bool)>) -> Vec<PastDecision> {
    recorded
        .into_iter()
        .filter_map(|(r, kept)| {
            let decision = PastDecision::of_recorded(
                &r.request,
                r.policy_input.as_deref(),
                &r.earlier_updates,
                Context {
                    cwd: r.cwd.as_deref().map(Path::new),
                    agent: r.agent_name.as_deref(),
                    version: r.protocol_version,
                },
                (r.outcome.as_deref(), r.option_kind.as_deref()),
                r.connection_id,
                r.session_id.as_deref().unwrap_or_default(),
                r.requested_at,
            )?;
            // Outside the filter, only a refusal counts.
            (kept || !decision.answer.allows()).then_some(decision)
        })
        .collect()
}
