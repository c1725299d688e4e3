//! The page's files, embedded in the binary (no Node toolchain: plain HTML, CSS and a module).
//! The report's stylesheet is served as it is, so a diff or a status looks the same in both.

/// The content type and text of an embedded file.
pub(crate) fn get(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "index.html" => (
            "text/html; charset=utf-8",
            include_str!("assets/index.html"),
        ),
        "app.js" => (
            "text/javascript; charset=utf-8",
            include_str!("assets/app.js"),
        ),
        "style.css" => ("text/css; charset=utf-8", include_str!("assets/style.css")),
        "report.css" => (
            "text/css; charset=utf-8",
            include_str!("../inspect/report/report.css"),
        ),
        _ => return None,
    })
}
