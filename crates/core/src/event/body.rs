//! [`EventBody`]: the payload of an event on its way to the blackboard.
//!
//! A writer hands over a typed payload ([`EventPayload`]); the store keeps JSON text. Going through a
//! `serde_json::Value` on the way cost a tree of allocations per event (every key a `String`, every object a
//! map) only to be written out as text again, about a tenth of the runner's allocations. So a typed body is
//! encoded once, straight to text, when it is written — or when the redacting blackboard needs to look at
//! it, which reads the text and goes back to a `Value` only when the text may hold something to redact.
//! A body given as a `Value` (tests, hand-written payloads, a redacted rewrite) stays one.
//!
//! The text of a typed body lists its fields in their declared order, where a `Value` lists them sorted:
//! the same JSON document either way, which every reader parses.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::EventPayload;

/// An event's payload about to be appended (see the module docs).
#[derive(Debug, Clone)]
pub struct EventBody(Body);

#[derive(Debug, Clone)]
enum Body {
    /// Not encoded yet.
    Typed(Box<EventPayload>),
    /// A typed payload encoded: JSON text this module wrote.
    Text(String),
    /// A JSON value.
    Json(Value),
}

impl EventBody {
    /// A typed payload, encoded when it is written.
    pub fn typed(payload: EventPayload) -> Self {
        EventBody(Body::Typed(Box::new(payload)))
    }

    /// A payload given as JSON.
    pub fn json(value: Value) -> Self {
        EventBody(Body::Json(value))
    }

    /// A typed body encoded to its text now (other bodies as they are).
    pub fn encoded(self) -> Self {
        match self.0 {
            Body::Typed(payload) => EventBody(Body::Text(payload.encode_text())),
            other => EventBody(other),
        }
    }

    /// The text of an encoded typed body ([`EventBody::encoded`]); `None` for any other.
    pub fn encoded_text(&self) -> Option<&str> {
        match &self.0 {
            Body::Text(text) => Some(text),
            _ => None,
        }
    }

    /// The JSON text to store.
    pub fn json_text(&self) -> Cow<'_, str> {
        match &self.0 {
            Body::Typed(payload) => Cow::Owned(payload.encode_text()),
            Body::Text(text) => Cow::Borrowed(text),
            // A `Value` always serialises (its map keys are strings).
            Body::Json(value) => Cow::Owned(value.to_string()),
        }
    }

    /// The payload as a JSON value.
    pub fn to_value(&self) -> Value {
        match &self.0 {
            Body::Typed(payload) => payload.encode(),
            Body::Text(text) => parse_own(text),
            Body::Json(value) => value.clone(),
        }
    }

    /// [`EventBody::to_value`], consuming the body.
    pub fn into_value(self) -> Value {
        match self.0 {
            Body::Json(value) => value,
            other => EventBody(other).to_value(),
        }
    }

    /// Changes the payload as a JSON value; the body is one from then on.
    pub fn edit_json<T>(&mut self, edit: impl FnOnce(&mut Value) -> T) -> T {
        let mut value = std::mem::replace(self, EventBody::json(Value::Null)).into_value();
        let out = edit(&mut value);
        *self = EventBody::json(value);
        out
    }
}

/// Text this module wrote from a typed payload: it parses (a failure would be a serde_json bug, and reads as
/// `null` rather than a panic).
fn parse_own(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

impl From<Value> for EventBody {
    fn from(value: Value) -> Self {
        EventBody::json(value)
    }
}

impl From<EventPayload> for EventBody {
    fn from(payload: EventPayload) -> Self {
        EventBody::typed(payload)
    }
}

/// Two bodies are equal when they are the same JSON document, however each is held.
impl PartialEq for EventBody {
    fn eq(&self, other: &Self) -> bool {
        self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for EventBody {
    fn eq(&self, other: &Value) -> bool {
        &self.to_value() == other
    }
}

/// On the wire a body is its JSON document, as the payload was before it had a type of its own.
impl Serialize for EventBody {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Body::Json(value) => value.serialize(serializer),
            _ => self.to_value().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for EventBody {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(EventBody::json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::payload::{BriefStatusChange, LogLine};
    use serde_json::json;

    fn status() -> EventPayload {
        EventPayload::BriefStatus(BriefStatusChange {
            from: "pending".into(),
            to: "active".into(),
            note: Some("a \"quoted\" note\n".into()),
            ..BriefStatusChange::default()
        })
    }

    #[test]
    fn a_typed_body_is_the_same_document_however_it_is_held() {
        let typed = EventBody::typed(status());
        let value = status().encode();
        let encoded = typed.clone().encoded();
        assert!(typed.encoded_text().is_none());
        let text = encoded.encoded_text().unwrap().to_owned();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), value);
        assert_eq!(typed.json_text(), Cow::<str>::Owned(text.clone()));
        assert!(matches!(encoded.json_text(), Cow::Borrowed(_)));
        for body in [&typed, &encoded, &EventBody::json(value.clone())] {
            assert_eq!(body.to_value(), value);
            assert_eq!(body.clone().into_value(), value);
            assert_eq!(*body, value);
            assert_eq!(
                serde_json::to_value(body).unwrap(),
                value,
                "on the wire it is the document"
            );
        }
        assert_eq!(typed, encoded);
        assert_eq!(typed, EventBody::json(value));
    }

    #[test]
    fn a_body_changed_in_place_becomes_json_and_keeps_the_change() {
        let mut body = EventBody::typed(EventPayload::Log(LogLine::new("info", None, "hello"))).encoded();
        body.edit_json(|value| value["message"] = json!("changed"));
        assert!(body.encoded_text().is_none());
        assert_eq!(body.to_value()["message"], json!("changed"));
        assert!(body.json_text().contains("changed"));
        let back: EventBody = serde_json::from_value(json!({"a": 1})).unwrap();
        assert_eq!(back, json!({"a": 1}));
    }
}
