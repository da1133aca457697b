//! A request frame checked against its schema before it is decoded: every array count,
//! string, bytes and records length must fit in the bytes that follow it, and the frame's
//! elements are counted so the memory decoding and answering it will take is known first.
//!
//! This guards the decoder. The protocol codecs (`kafka-protocol` 0.18) reserve a vector for
//! an array's declared element count before decoding any element, so a few bytes declaring
//! two billion elements would ask for a hundred gigabytes at once, which aborts the process
//! where memory is not overcommitted. And a legitimate-looking request naming millions of
//! partitions in a few bytes each decodes, and is answered, at many times its size. Here an
//! array may declare no more elements than the bytes left could hold (each takes at least its
//! smallest encoding), and the element count prices the request for the request memory pools
//! (the broker's `network::memory`) before any of it is decoded.
//!
//! The schemas ([`generated`]) are those of the APIs and versions the broker serves, as Kafka's
//! message definitions give them: `scripts/gen_protocol.py` writes them from the kafka-clients
//! jar for each row of the API table ([`crate::apis`]). The kinds of field below are
//! the ones they use (a struct nullable at only some versions would need adding; the script
//! refuses one). A frame of another API or version is not checked here; the dispatcher
//! refuses it without decoding its body.

mod generated;

use crate::ApiKey;
use bytes::Bytes;
use ferrolog_records::be;

/// What decoding one element (an entry of an array, a tagged field) and answering it costs at
/// most, in bytes: its decoded struct, the response struct answering it and its encoded bytes.
/// A test checks it against the codec's largest element types.
pub const ELEMENT_COST: u64 = 512;

/// The highest version, in a version range.
const MAX: i16 = i16::MAX;

/// Versions `min..=max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Versions {
    min: i16,
    max: i16,
}

const fn v(min: i16, max: i16) -> Versions {
    Versions { min, max }
}

/// No version.
const NONE: Versions = Versions { min: 1, max: 0 };

impl Versions {
    fn contains(self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }
}

/// A field's type on the wire.
#[derive(Debug)]
pub(crate) enum Kind {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint16,
    /// An IEEE 754 double, 8 bytes.
    Float64,
    Uuid,
    String,
    Bytes,
    Records,
    /// An array of a primitive type.
    PrimitiveArray(&'static Kind),
    /// An array of structs with these fields.
    Array(&'static [Field]),
    /// A struct that may be null: an `int8` marker (1 present, −1 null), then its fields.
    NullableStruct(&'static [Field]),
    /// A struct that may not be null: its fields, without a marker.
    Struct(&'static [Field]),
}

/// One field of a message or struct: its kind, and the versions it is in, may be null in, and
/// is a tagged field in.
#[derive(Debug)]
pub(crate) struct Field {
    name: &'static str,
    kind: Kind,
    versions: Versions,
    nullable: Versions,
    tag: Option<(u32, Versions)>,
}

impl Field {
    const fn new(name: &'static str, kind: Kind, versions: Versions) -> Self {
        Self {
            name,
            kind,
            versions,
            nullable: NONE,
            tag: None,
        }
    }
    const fn nullable(mut self, versions: Versions) -> Self {
        self.nullable = versions;
        self
    }
    const fn tagged(mut self, tag: u32, versions: Versions) -> Self {
        self.tag = Some((tag, versions));
        self
    }
}

/// What an entry of a primitive array is checked as: never null.
const ELEMENT: Field = Field::new("an array entry", Kind::Bool, v(0, MAX));

/// A request message: its API key and its fields. The versions it is checked at are those the
/// broker serves ([`crate::apis::supported_range`]).
#[derive(Debug)]
pub(crate) struct Message {
    api_key: i16,
    fields: &'static [Field],
}

/// Whether `api` at `version` is flexible (compact lengths and tagged fields): exactly when its
/// request header is version 2.
fn is_flexible(api: ApiKey, version: i16) -> bool {
    api.request_header_version(version) >= 2
}

/// A request frame that passed [`scan`]: the only kind the dispatcher decodes.
#[derive(Debug, Clone)]
pub struct CheckedFrame {
    bytes: Bytes,
    shape: Shape,
}

impl CheckedFrame {
    pub fn shape(&self) -> Shape {
        self.shape
    }
    /// The request's API key (the scan checked the frame holds one).
    pub fn api_key(&self) -> i16 {
        ferrolog_records::be::i16_at(&self.bytes, 0)
    }
    /// What decoding and answering this request may take beyond its frame.
    pub fn work_bytes(&self) -> u64 {
        self.shape.work_bytes()
    }
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }
}

/// What the check learned of a frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shape {
    /// Array entries and tagged fields in the frame.
    pub elements: u64,
}

impl Shape {
    /// What decoding and answering a frame with this shape may take beyond the frame.
    pub fn work_bytes(&self) -> u64 {
        self.elements.saturating_mul(ELEMENT_COST)
    }
}

/// A frame that does not fit its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The API's name, for the metrics.
    pub api: String,
    pub reason: String,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} request: {}", self.api, self.reason)
    }
}

/// Checks `frame` (header and body) against the schema of its API and version.
pub fn scan(frame: Bytes) -> Result<CheckedFrame, Malformed> {
    let shape = shape_of(&frame)?;
    Ok(CheckedFrame {
        bytes: frame,
        shape,
    })
}

fn shape_of(frame: &Bytes) -> Result<Shape, Malformed> {
    let Some(key_bytes) = frame.get(..4) else {
        return Err(Malformed {
            api: "Unknown".into(),
            reason: format!("a frame of {} bytes is shorter than a header", frame.len()),
        });
    };
    let api_key = be::i16_at(key_bytes, 0);
    let version = be::i16_at(key_bytes, 2);
    let Ok(api) = ApiKey::try_from(api_key) else {
        return Ok(Shape::default());
    };
    let served =
        crate::apis::supported_range(api).is_some_and(|(min, max)| (min..=max).contains(&version));
    let Some(message) = generated::ALL
        .iter()
        .find(|message| served && message.api_key == api_key)
    else {
        return Ok(Shape::default());
    };
    let mut reader = Reader {
        bytes: frame,
        position: 4,
    };
    let malformed = |reason: String| Malformed {
        api: format!("{api:?}"),
        reason,
    };
    let mut shape = Shape::default();
    let walk = |reader: &mut Reader<'_>, shape: &mut Shape| -> Result<(), String> {
        reader.skip(4, "the correlation id")?;
        // The client id is a nullable string with an int16 length in every header version.
        let client_id = reader.int(2, "the client id's length")?;
        if client_id > 0 {
            reader.skip(client_id as usize, "the client id")?;
        }
        let flexible = is_flexible(api, version);
        if flexible {
            walk_tagged_fields(reader, &[], version, shape)?;
        }
        walk_fields(reader, message.fields, version, flexible, shape)
    };
    walk(&mut reader, &mut shape).map_err(malformed)?;
    Ok(shape)
}

/// Reads a frame from a position, refusing to go past its end.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    fn skip(&mut self, count: usize, what: &str) -> Result<(), String> {
        if count > self.remaining() {
            return Err(format!(
                "{what} needs {count} bytes at byte {}, but {} remain",
                self.position,
                self.remaining()
            ));
        }
        self.position += count;
        Ok(())
    }

    /// A big-endian signed integer of `width` bytes (1, 2 or 4).
    fn int(&mut self, width: usize, what: &str) -> Result<i64, String> {
        let start = self.position;
        self.skip(width, what)?;
        let bytes = &self.bytes[start..start + width];
        Ok(match width {
            1 => i64::from(bytes[0] as i8),
            2 => i64::from(be::i16_at(bytes, 0)),
            _ => i64::from(be::i32_at(bytes, 0)),
        })
    }

    /// An unsigned varint of at most 5 bytes.
    fn varint(&mut self, what: &str) -> Result<u64, String> {
        let mut value = 0u64;
        for index in 0..5 {
            let start = self.position;
            self.skip(1, what)?;
            let byte = self.bytes[start];
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(format!("{what}: a varint longer than 5 bytes"))
    }

    /// A length or count: `int16`/`int32` before flexible versions, a varint of length + 1 in
    /// them. `None` for null (−1, or 0 as a varint).
    fn length(&mut self, flexible: bool, width: usize, what: &str) -> Result<Option<u64>, String> {
        if flexible {
            let value = self.varint(what)?;
            return Ok(value.checked_sub(1));
        }
        let value = self.int(width, what)?;
        match value {
            -1 => Ok(None),
            value if value < 0 => Err(format!("{what} is negative ({value})")),
            value => Ok(Some(value as u64)),
        }
    }
}

fn walk_fields(
    reader: &mut Reader<'_>,
    fields: &[Field],
    version: i16,
    flexible: bool,
    shape: &mut Shape,
) -> Result<(), String> {
    for field in fields {
        let tagged = field
            .tag
            .is_some_and(|(_, versions)| versions.contains(version));
        if field.versions.contains(version) && !tagged {
            walk_value(reader, field, &field.kind, version, flexible, shape)?;
        }
    }
    if flexible {
        walk_tagged_fields(reader, fields, version, shape)?;
    }
    Ok(())
}

/// A flexible struct's tagged fields: known ones are checked against their schema within
/// their declared size, unknown ones skipped.
fn walk_tagged_fields(
    reader: &mut Reader<'_>,
    fields: &[Field],
    version: i16,
    shape: &mut Shape,
) -> Result<(), String> {
    let count = reader.varint("the tagged field count")?;
    check_count(reader, count, 2, "tagged fields")?;
    shape.elements += count;
    for _ in 0..count {
        let tag = reader.varint("a tag")?;
        let size = reader.varint("a tagged field's size")? as usize;
        let start = reader.position;
        reader.skip(size, "a tagged field")?;
        let known = fields.iter().find(|field| {
            field.tag.is_some_and(|(field_tag, versions)| {
                u64::from(field_tag) == tag && versions.contains(version)
            })
        });
        if let Some(field) = known {
            let mut inner = Reader {
                bytes: &reader.bytes[..start + size],
                position: start,
            };
            // Tagged fields exist only in flexible versions.
            walk_value(&mut inner, field, &field.kind, version, true, shape)?;
        }
    }
    Ok(())
}

fn walk_value(
    reader: &mut Reader<'_>,
    field: &Field,
    kind: &Kind,
    version: i16,
    flexible: bool,
    shape: &mut Shape,
) -> Result<(), String> {
    let nullable = field.nullable.contains(version);
    let null = |what: &str| -> Result<(), String> {
        if nullable {
            Ok(())
        } else {
            Err(format!(
                "{} is null, which it may not be ({what})",
                field.name
            ))
        }
    };
    match kind {
        Kind::Bool | Kind::Int8 => reader.skip(1, field.name),
        Kind::Int16 | Kind::Uint16 => reader.skip(2, field.name),
        Kind::Int32 => reader.skip(4, field.name),
        Kind::Int64 | Kind::Float64 => reader.skip(8, field.name),
        Kind::Uuid => reader.skip(16, field.name),
        Kind::String => match reader.length(flexible, 2, field.name)? {
            None => null("string"),
            Some(length) => reader.skip(length as usize, field.name),
        },
        Kind::Bytes | Kind::Records => match reader.length(flexible, 4, field.name)? {
            None => null("bytes"),
            Some(length) => reader.skip(length as usize, field.name),
        },
        Kind::PrimitiveArray(element) => match reader.length(flexible, 4, field.name)? {
            None => null("array"),
            Some(count) => {
                check_count(
                    reader,
                    count,
                    min_size(element, version, flexible),
                    field.name,
                )?;
                shape.elements += count;
                for _ in 0..count {
                    walk_value(reader, &ELEMENT, element, version, flexible, shape)?;
                }
                Ok(())
            }
        },
        Kind::NullableStruct(fields) => {
            let marker = reader.int(1, field.name)?;
            match marker {
                -1 => null("struct"),
                1 => walk_fields(reader, fields, version, flexible, shape),
                other => Err(format!(
                    "{}: marker {other} is neither 1 (present) nor -1 (null)",
                    field.name
                )),
            }
        }
        Kind::Struct(fields) => walk_fields(reader, fields, version, flexible, shape),
        Kind::Array(fields) => match reader.length(flexible, 4, field.name)? {
            None => null("array"),
            Some(count) => {
                check_count(
                    reader,
                    count,
                    min_struct_size(fields, version, flexible),
                    field.name,
                )?;
                shape.elements += count;
                for _ in 0..count {
                    walk_fields(reader, fields, version, flexible, shape)?;
                }
                Ok(())
            }
        },
    }
}

/// Refuses a count of elements the bytes left cannot hold at `min_size` bytes each.
fn check_count(reader: &Reader<'_>, count: u64, min_size: u64, what: &str) -> Result<(), String> {
    let most = reader.remaining() as u64 / min_size.max(1);
    if count > most {
        return Err(format!(
            "{what} declares {count} elements at byte {}, but the {} bytes left hold at most {most}",
            reader.position,
            reader.remaining()
        ));
    }
    Ok(())
}

/// The fewest bytes a value of `kind` takes.
fn min_size(kind: &Kind, version: i16, flexible: bool) -> u64 {
    let length_prefix = |width: u64| if flexible { 1 } else { width };
    match kind {
        Kind::Bool | Kind::Int8 | Kind::NullableStruct(_) => 1,
        Kind::Int16 | Kind::Uint16 => 2,
        Kind::Int32 => 4,
        Kind::Int64 | Kind::Float64 => 8,
        Kind::Uuid => 16,
        Kind::String => length_prefix(2),
        Kind::Bytes | Kind::Records | Kind::PrimitiveArray(_) | Kind::Array(_) => length_prefix(4),
        Kind::Struct(fields) => min_struct_size(fields, version, flexible),
    }
}

fn min_struct_size(fields: &[Field], version: i16, flexible: bool) -> u64 {
    let own: u64 = fields
        .iter()
        .filter(|field| {
            field.versions.contains(version)
                && !field
                    .tag
                    .is_some_and(|(_, versions)| versions.contains(version))
        })
        .map(|field| min_size(&field.kind, version, flexible))
        .sum();
    own + u64::from(flexible)
}

#[cfg(test)]
mod tests;
