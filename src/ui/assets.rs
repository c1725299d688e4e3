//! The page's files, embedded in the binary (no Node toolchain: plain HTML, CSS and a module).

/// The content type and text of an embedded file.
pub fn get(name: &str) -> Option<(&'static str, &'static str)> {
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
        _ => return None,
    })
}
