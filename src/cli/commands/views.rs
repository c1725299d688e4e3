//! The views of what was recorded: `sessions`, `show`, `tools`, `report`, `tail`, `stats`.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context;

use crate::inspect;
use crate::inspect::show;
use crate::query;
use crate::query::Reader;
use crate::query::ToolFilter;

use super::super::config::Config;
use super::super::{
    ColorArg, ReportArgs, SearchArgs, SessionsArgs, ShowArgs, StatsArgs, TailArgs, ToolsArgs,
    config, json_text, microseconds_before_now, print, print_json, write_private,
};

/// `acptap sessions`.
pub(in crate::cli) fn sessions(args: SessionsArgs, _config: &Config) -> anyhow::Result<i32> {
    let reader = args.db.read()?;
    let sessions = query::list_sessions(&reader, args.limit)?;
    if args.json {
        print_json(&sessions)?;
    } else if sessions.is_empty() {
        eprintln!("no session recorded in {}", args.db.path()?.display());
    } else {
        print(&inspect::render_sessions(&sessions))?;
    }
    Ok(0)
}

/// `acptap show`.
pub(in crate::cli) fn show(args: ShowArgs, _config: &Config) -> anyhow::Result<i32> {
    let reader = args.db.read()?;
    let session = query::resolve_session(&reader, &args.session)?;
    // Written a turn at a time, as the turns are read: a session of any length takes the memory
    // of one turn.
    let head = show::head(&reader, &session)?;
    // What came before the first turn: a resume and the history it replayed, a title set.
    let opening = show::opening(&reader, &session)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut written: std::io::Result<()> = Ok(());
    let mut write = |text: &str| {
        if written.is_ok() {
            written = out.write_all(text.as_bytes());
        }
    };
    if args.json {
        // The layout of `serde_json::to_string_pretty` of the whole timeline, one turn at a time.
        let indented = |value: String, by: &str| value.replace('\n', &format!("\n{by}"));
        write(&format!(
            "{{\n  \"session\": {},\n  \"opening\": {},\n  \"total_turns\": {},\n  \"turns\": [",
            indented(json_text(&head.session)?, "  "),
            indented(json_text(&opening)?, "  "),
            head.total_turns
        ));
        let mut first = true;
        show::for_each_turn(&reader, &session, 0..usize::MAX, |turn| {
            let text = json_text(&turn).unwrap_or_default();
            write(if first { "\n    " } else { ",\n    " });
            write(&indented(text, "    "));
            first = false;
        })?;
        write(if first { "]\n}\n" } else { "\n  ]\n}\n" });
    } else {
        write(&show::render_head(&head.session, head.total_turns));
        write(&show::render_opening(&opening));
        show::for_each_turn(&reader, &session, 0..usize::MAX, |turn| {
            write(&show::render_turn(&turn));
        })?;
    }
    written.and_then(|()| out.flush())?;
    Ok(0)
}

/// `acptap tools`.
pub(in crate::cli) fn tools(args: ToolsArgs, _config: &Config) -> anyhow::Result<i32> {
    let reader = args.db.read()?;
    let session = args
        .session
        .as_deref()
        .map(|s| query::resolve_session(&reader, s))
        .transpose()?;
    let rows = query::tool_calls(
        &reader,
        &ToolFilter {
            session,
            status: args.status,
            kind: args.kind,
        },
    )?;
    if args.json {
        print_json(&rows)?;
    } else {
        print(&inspect::render_tools(&rows))?;
    }
    Ok(0)
}

/// `acptap report`.
pub(in crate::cli) fn report(args: ReportArgs, _config: &Config) -> anyhow::Result<i32> {
    let reader = args.db.read()?;
    let session = query::resolve_session(&reader, &args.session)?;
    let total = query::turns(&reader, &session)?.len();
    if args.turns.start > 0 && args.turns.start >= total {
        eprintln!(
            "acptap: --turns {}-: session {} has {total} turn(s); give a range from 1 to {total}",
            args.turns.start + 1,
            inspect::terminal_line(&session.session_id, inspect::NAME_BYTES)
        );
        return Ok(2);
    }
    let html = crate::inspect::report::render(&reader, &session, args.turns.clone())?;
    let path = args.output.unwrap_or_else(|| {
        let safe: String = session
            .session_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        PathBuf::from(format!("acptap-{safe}.html"))
    });
    write_private(&path, html.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    print(&format!("{}\n", path.display()))?;
    Ok(0)
}

/// `acptap tail`.
pub(in crate::cli) fn tail(args: TailArgs, config: &Config) -> anyhow::Result<i32> {
    use std::io::IsTerminal;
    let path = args.db.path()?;
    let color = match args.color {
        Some(ColorArg::Always) => true,
        Some(ColorArg::Never) => false,
        Some(ColorArg::Auto) | None => match config.color {
            Some(config::ColorChoice::Always) => true,
            Some(config::ColorChoice::Never) => false,
            // https://no-color.org: a set, non-empty NO_COLOR means no colour by default.
            _ => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stdout().is_terminal()
            }
        },
    };
    if !path.exists() {
        eprintln!("acptap: waiting for {} to be created", path.display());
        while !path.exists() {
            std::thread::sleep(args.interval);
        }
    }
    let reader = Reader::open(&path)?;
    let mut cursor = crate::inspect::tail::Cursor::at_end(&reader)?;
    eprintln!("acptap: following {} (Ctrl-C to stop)", path.display());
    loop {
        let mut text = String::new();
        for event in cursor.poll(&reader)? {
            if args.json {
                text.push_str(&crate::terminal::json_terminal_safe(serde_json::to_string(
                    &event,
                )?));
            } else {
                text.push_str(&crate::inspect::tail::render(&event, color));
            }
            text.push('\n');
        }
        if !text.is_empty() {
            print(&text)?;
        }
        std::thread::sleep(args.interval);
    }
}

/// `acptap stats`.
pub(in crate::cli) fn stats(args: StatsArgs, _config: &Config) -> anyhow::Result<i32> {
    use crate::inspect::stats;
    let reader = args.db.read()?;
    if args.by_method {
        // clap requires a SESSION with --by-method.
        let spec = args.session.as_deref().ok_or_else(|| {
            anyhow::anyhow!("--by-method needs a SESSION (`last` for the latest)")
        })?;
        let latency = stats::by_method(&reader, &query::resolve_session(&reader, spec)?)?;
        if args.json {
            print_json(&latency)?;
        } else {
            print(&stats::render_latency(&latency))?;
        }
        return Ok(0);
    }
    let scope = match (&args.session, args.since) {
        (Some(spec), _) => stats::Scope::Session(query::resolve_session(&reader, spec)?),
        (None, Some(since)) => stats::Scope::Since(microseconds_before_now(since)),
        (None, None) => stats::Scope::Since(0),
    };
    let result = stats::stats(&reader, &scope)?;
    if args.json {
        print_json(&result)?;
    } else {
        print(&stats::render(&result))?;
    }
    Ok(0)
}

/// `acptap search`.
pub(in crate::cli) fn search(args: SearchArgs, _config: &Config) -> anyhow::Result<i32> {
    use crate::query::search::{Search, search};
    if args.text.as_deref().is_some_and(|t| t.trim().is_empty()) {
        anyhow::bail!(
            "the search text is empty: give words to find, or only --tool, --status or --path"
        );
    }
    if args.text.is_none() && args.kind.is_none() && args.status.is_none() && args.path.is_none() {
        anyhow::bail!("search for what? give TEXT, --tool KIND, --status STATUS or --path GLOB");
    }
    let path = args
        .path
        .as_deref()
        .map(|glob| {
            crate::policy::paths::glob_set(&[glob], Default::default())
                .map_err(|e| anyhow::anyhow!("--path: {e}"))
        })
        .transpose()?;
    if args.text.is_some() && args.db.path()?.exists() {
        // Bring the index up to what is recorded, through the index's own writer: it never
        // migrates (an older database is refused below, with the fix, as by every view). A
        // database this user cannot write is searched as it is indexed.
        use crate::record::{StoreError, search_index};
        match search_index::bring_up_to_date(&args.db.path()?) {
            Ok(_) | Err(StoreError::Schema { .. }) => {}
            Err(e) => {
                eprintln!("acptap: cannot update the search index ({e}); searching what it holds")
            }
        }
    }
    let reader = args.db.read()?;
    let hits = search(
        &reader,
        &Search {
            text: args.text.clone(),
            kind: args.kind.clone(),
            status: args.status.clone(),
            path,
        },
        args.limit,
    )?;
    if args.json {
        print_json(&hits)?;
        return Ok(0);
    }
    let mut out = String::new();
    if hits.is_empty() {
        out.push_str("nothing found\n");
    }
    for hit in &hits {
        out.push_str(&format!(
            "{}  connection {}  started {}{}\n",
            inspect::terminal_line(&hit.session_id, inspect::NAME_BYTES),
            hit.connection_id,
            inspect::format_time(hit.started_at),
            match (hit.lines, hit.first_seq) {
                (0, _) => String::new(),
                (n, Some(seq)) => format!("  {n} matching line(s), the first at seq {seq}"),
                (n, None) => format!("  {n} matching line(s)"),
            }
        ));
        for call in &hit.tool_calls {
            out.push_str(&format!(
                "  {:<10} {:<12} {}  ({})\n",
                inspect::terminal_line(call.kind.as_deref().unwrap_or("-"), inspect::NAME_BYTES),
                inspect::terminal_line(call.status.as_deref().unwrap_or("-"), inspect::NAME_BYTES),
                inspect::terminal_line(call.title.as_deref().unwrap_or(""), inspect::VALUE_BYTES),
                inspect::terminal_line(&call.tool_call_id, inspect::NAME_BYTES),
            ));
        }
    }
    print(&out)?;
    Ok(0)
}
