//! An incremental server-sent-events parser (the WHATWG `text/event-stream` rules): bytes go in as they
//! arrive from the socket, complete events come out. Handles `event:`/`data:` fields, multi-line data,
//! comments (`: ping`), LF, CRLF and lone-CR line ends (also when a CRLF is split between two reads), a
//! leading byte-order mark, and UTF-8 split across reads.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SseEvent {
    /// The `event:` field, if any (Anthropic names every event; OpenAI names none).
    pub event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
}

/// The parser state between reads.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds the next bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    /// Ends the stream. A final event without its blank line is still dispatched: some servers close the
    /// connection right after the last `data:` line.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut out);
        }
        self.dispatch(&mut out);
        out.pop()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // `id` and `retry` matter only to browsers reconnecting; unknown fields are ignored by the spec.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data {
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::default();
        let mut events = Vec::new();
        for chunk in input.chunks(piece) {
            events.extend(parser.feed(chunk));
        }
        events.extend(parser.finish());
        events
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn named_events_multiline_data_and_comments() {
        let input = b"\xEF\xBB\xBF: keep-alive\nevent: message_start\ndata: {\"a\":1}\n\n\
                      data: line one\ndata:line two\n\nevent: ping\n\n";
        let want = vec![
            ev(Some("message_start"), "{\"a\":1}"),
            ev(None, "line one\nline two"),
        ];
        for piece in 1..input.len() {
            assert_eq!(parse_in_pieces(input, piece), want, "piece size {piece}");
        }
    }

    #[test]
    fn crlf_and_lone_cr_line_ends_in_any_split() {
        let input = b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: [DONE]\n\n";
        let want = vec![ev(Some("a"), "1"), ev(Some("b"), "2"), ev(None, "[DONE]")];
        for piece in 1..input.len() {
            assert_eq!(parse_in_pieces(input, piece), want, "piece size {piece}");
        }
    }

    #[test]
    fn utf8_split_across_reads_and_unterminated_last_event() {
        let input = "data: héllo → wörld\n\ndata: tail".as_bytes();
        let want = vec![ev(None, "héllo → wörld"), ev(None, "tail")];
        for piece in 1..input.len() {
            assert_eq!(parse_in_pieces(input, piece), want, "piece size {piece}");
        }
    }

    proptest::proptest! {
        /// Any events, written with any line ending and comments, read in pieces cut anywhere, come back
        /// exactly.
        #[test]
        fn round_trips_any_events_split_anywhere(
            events in proptest::collection::vec(
                (proptest::option::of("[a-z_]{1,12}"), proptest::collection::vec("[^\r\n]{0,12}", 1..4)),
                0..6,
            ),
            ending in 0..3usize,
            cuts in proptest::collection::vec(0..400usize, 0..10),
        ) {
            let eol = ["\n", "\r\n", "\r"][ending];
            let mut text = String::new();
            for (name, lines) in &events {
                text.push_str(&format!(": comment{eol}"));
                if let Some(name) = name {
                    text.push_str(&format!("event: {name}{eol}"));
                }
                for line in lines {
                    text.push_str(&format!("data: {line}{eol}"));
                }
                text.push_str(eol);
            }
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c < bytes.len()).collect();
            cuts.sort_unstable();
            let mut parser = SseParser::default();
            let mut got = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                got.extend(parser.feed(&bytes[start..cut]));
                start = cut;
            }
            got.extend(parser.finish());
            let want: Vec<SseEvent> = events
                .iter()
                .map(|(name, lines)| SseEvent { event: name.clone(), data: lines.join("\n") })
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn empty_data_field_still_dispatches() {
        assert_eq!(parse_in_pieces(b"data\n\n", 3), vec![ev(None, "")]);
    }
}
