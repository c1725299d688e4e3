//! The file-system facts a decision looks up, behind one trait: where a symbolic link leads,
//! what a directory holds (a glob argument's matches), what is at a path (a repository-shaped
//! directory), a path as `realpath` resolves it (the replay's fence), and the process's working
//! directory (a relative session cwd). [`Disk`] answers them from the machine; a test answers
//! them from a map, so a decision is exercised without touching the disk.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    File,
    Dir,
    /// A symbolic link (only when it is not followed).
    Link,
    /// Anything else: a pipe, a socket, a device.
    Other,
}

/// The file system as a decision sees it. Every answer is `None` where the machine would
/// answer with an error (nothing there, no permission): the callers treat both alike.
pub trait FileSystem {
    /// Where the symbolic link at `path` points, as written in it; `None` when `path` is not a
    /// symbolic link or cannot be read.
    fn read_link(&self, path: &Path) -> Option<PathBuf>;

    /// The names in the directory `path`, read lazily (a caller may stop early); `None` when it
    /// cannot be read. Entries that cannot be read are left out.
    fn list_dir<'a>(&'a self, path: &Path) -> Option<Box<dyn Iterator<Item = OsString> + 'a>>;

    /// What is at `path`: through symbolic links (`stat`) when `follow`, else the entry itself
    /// (`lstat`).
    fn entry(&self, path: &Path, follow: bool) -> Option<Entry>;

    /// `path` with every symbolic link, `.` and `..` resolved (`realpath`); `None` when a part
    /// of it does not exist.
    fn canonicalize(&self, path: &Path) -> Option<PathBuf>;

    /// The process's working directory.
    fn current_dir(&self) -> Option<PathBuf>;
}

/// The machine's file system: what the proxy, the replay and the command line decide with.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

impl FileSystem for Disk {
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        std::fs::read_link(path).ok()
    }

    fn list_dir<'a>(&'a self, path: &Path) -> Option<Box<dyn Iterator<Item = OsString> + 'a>> {
        let entries = std::fs::read_dir(path).ok()?;
        Some(Box::new(entries.flatten().map(|entry| entry.file_name())))
    }

    fn entry(&self, path: &Path, follow: bool) -> Option<Entry> {
        let meta = if follow {
            std::fs::metadata(path)
        } else {
            std::fs::symlink_metadata(path)
        };
        let kind = meta.ok()?.file_type();
        Some(if kind.is_symlink() {
            Entry::Link
        } else if kind.is_dir() {
            Entry::Dir
        } else if kind.is_file() {
            Entry::File
        } else {
            Entry::Other
        })
    }

    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        path.canonicalize().ok()
    }

    fn current_dir(&self) -> Option<PathBuf> {
        std::env::current_dir().ok()
    }
}

/// A file system held in memory, for tests: directories, files and symbolic links, each listed
/// in its parent directory (made as needed). What it resolves, it resolves as the policy does.
#[cfg(test)]
#[derive(Debug, Default)]
pub(crate) struct Fake {
    entries: std::collections::BTreeMap<PathBuf, Entry>,
    links: std::collections::HashMap<PathBuf, PathBuf>,
    listings: std::collections::BTreeMap<PathBuf, Vec<OsString>>,
    pub(crate) current_dir: Option<PathBuf>,
}

#[cfg(test)]
impl Fake {
    pub(crate) fn dir(self, path: &str) -> Fake {
        self.with(path, Entry::Dir)
    }

    pub(crate) fn file(self, path: &str) -> Fake {
        self.with(path, Entry::File)
    }

    /// A symbolic link at `path` to `target`, as written (relative or absolute).
    pub(crate) fn link(mut self, path: &str, target: &str) -> Fake {
        self.links
            .insert(PathBuf::from(path), PathBuf::from(target));
        self.with(path, Entry::Link)
    }

    fn with(mut self, path: &str, entry: Entry) -> Fake {
        let path = PathBuf::from(path);
        if let Some(parent) = path.parent().filter(|p| !self.entries.contains_key(*p)) {
            self = self.dir(&parent.to_string_lossy());
        }
        if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
            self.listings
                .entry(parent.to_owned())
                .or_default()
                .push(name.to_owned());
        }
        self.entries.insert(path, entry);
        self
    }
}

#[cfg(test)]
impl FileSystem for Fake {
    fn read_link(&self, path: &Path) -> Option<PathBuf> {
        self.links.get(path).cloned()
    }

    fn list_dir<'a>(&'a self, path: &Path) -> Option<Box<dyn Iterator<Item = OsString> + 'a>> {
        if self.entries.get(path) != Some(&Entry::Dir) {
            return None;
        }
        let names = self
            .listings
            .get(path)
            .map(Vec::as_slice)
            .unwrap_or_default();
        Some(Box::new(names.iter().cloned()))
    }

    fn entry(&self, path: &Path, follow: bool) -> Option<Entry> {
        if follow {
            return self.entries.get(&self.canonicalize(path)?).copied();
        }
        self.entries.get(path).copied()
    }

    /// Links followed as the policy follows them; `None` unless where they lead exists.
    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        let real = super::paths::normalise(self, &path.to_string_lossy(), None, None)?;
        self.entries.contains_key(&real).then_some(real)
    }

    fn current_dir(&self) -> Option<PathBuf> {
        self.current_dir.clone()
    }
}
