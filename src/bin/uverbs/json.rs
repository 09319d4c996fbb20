//! A minimal JSON writer for `--json` output (objects, arrays, strings, numbers, booleans).

use std::fmt::Write;

/// A JSON value.
#[derive(Debug, Clone)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An unsigned integer.
    U(u64),
    /// A signed integer.
    I(i64),
    /// A string.
    S(String),
    /// An array.
    A(Vec<Json>),
    /// An object, keys in insertion order.
    O(Vec<(String, Json)>),
}

impl Json {
    /// An empty object.
    pub fn obj() -> Json {
        Json::O(Vec::new())
    }

    /// Adds a field to an object.
    pub fn set(&mut self, key: &str, value: impl Into<Json>) -> &mut Json {
        if let Json::O(fields) = self {
            fields.push((key.to_owned(), value.into()));
        }
        self
    }

    /// Renders with two-space indentation.
    pub fn pretty(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s
    }

    fn write(&self, out: &mut String, indent: usize) {
        let pad = |out: &mut String, n: usize| out.extend(std::iter::repeat_n(' ', n));
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::U(v) => write!(out, "{v}").unwrap(),
            Json::I(v) => write!(out, "{v}").unwrap(),
            Json::S(s) => write_str(out, s),
            Json::A(items) if items.is_empty() => out.push_str("[]"),
            Json::A(items) => {
                out.push_str("[\n");
                for (i, item) in items.iter().enumerate() {
                    pad(out, indent + 2);
                    item.write(out, indent + 2);
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                pad(out, indent);
                out.push(']');
            }
            Json::O(fields) if fields.is_empty() => out.push_str("{}"),
            Json::O(fields) => {
                out.push_str("{\n");
                for (i, (k, v)) in fields.iter().enumerate() {
                    pad(out, indent + 2);
                    write_str(out, k);
                    out.push_str(": ");
                    v.write(out, indent + 2);
                    out.push_str(if i + 1 < fields.len() { ",\n" } else { "\n" });
                }
                pad(out, indent);
                out.push('}');
            }
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
}

macro_rules! from_int {
    ($variant:ident: $($t:ty),*) => {$(
        impl From<$t> for Json {
            fn from(v: $t) -> Json {
                Json::$variant(v.into())
            }
        }
    )*};
}
from_int!(U: u8, u16, u32, u64);
from_int!(I: i8, i16, i32, i64);

impl From<bool> for Json {
    fn from(v: bool) -> Json {
        Json::Bool(v)
    }
}

impl From<&str> for Json {
    fn from(v: &str) -> Json {
        Json::S(v.to_owned())
    }
}

impl From<String> for Json {
    fn from(v: String) -> Json {
        Json::S(v)
    }
}

impl<T: Into<Json>> From<Vec<T>> for Json {
    fn from(v: Vec<T>) -> Json {
        Json::A(v.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(v: Option<T>) -> Json {
        v.map_or(Json::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_nested_values_and_escapes() {
        let mut o = Json::obj();
        o.set("name", "rx\"e\n0")
            .set("ports", vec![1u8, 2])
            .set("none", Option::<u32>::None);
        o.set("empty", Json::A(vec![]))
            .set("neg", -3i32)
            .set("ok", true);
        assert_eq!(
            o.pretty(),
            "{\n  \"name\": \"rx\\\"e\\n0\",\n  \"ports\": [\n    1,\n    2\n  ],\n  \"none\": null,\n  \"empty\": [],\n  \"neg\": -3,\n  \"ok\": true\n}"
        );
    }
}
