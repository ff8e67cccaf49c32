//! What a run cost, from its `usage` events: tokens and dollars per tier and per brief. A call made without
//! a price is counted as unpriced, never as free, so a total over unpriced calls says it is a lower bound.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use agency_core::event::payload::Usage;
use agency_core::event::{Event, EventKind, EventPayload};
use agency_core::{Brief, BriefId, Tier};

/// What some model calls used and cost.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Spend {
    /// Model calls.
    pub calls: u64,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cache reads and writes.
    pub cache_tokens: u64,
    /// Dollars, over the priced calls.
    pub usd: f64,
    /// Calls that had no price.
    pub unpriced_calls: u64,
}

impl Spend {
    fn add(&mut self, usage: &Usage) {
        self.calls += 1;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        self.cache_tokens += usage.cache_read_tokens + usage.cache_write_tokens;
        match usage.cost_usd {
            Some(usd) => self.usd += usd,
            None => self.unpriced_calls += 1,
        }
    }

    /// `$0.0123`, `$0.0123 + 2 unpriced calls`, or `unpriced` when no call had a price.
    pub fn usd_text(&self) -> String {
        match (self.unpriced_calls, self.calls) {
            (0, _) => format!("${:.4}", self.usd),
            (u, c) if u == c => "unpriced".to_string(),
            (1, _) => format!("${:.4} + 1 unpriced call", self.usd),
            (u, _) => format!("${:.4} + {u} unpriced calls", self.usd),
        }
    }
}

/// A run's spending, whole and split.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Cost {
    /// The whole run.
    pub total: Spend,
    /// Per tier, in tier order (calls recorded without a tier under `run`).
    pub tiers: BTreeMap<String, Spend>,
    /// Per brief, by whole id.
    pub briefs: BTreeMap<BriefId, Spend>,
}

/// Sums the `usage` events among `events`.
pub fn cost_of(events: &[Event]) -> Cost {
    let mut cost = Cost::default();
    for event in events.iter().filter(|e| e.kind == EventKind::Usage) {
        // A usage record that does not read is counted as an unpriced call with no tokens, not dropped: the
        // cost shown then says `unpriced` instead of a total that looks complete.
        let usage = match event.typed() {
            Ok(EventPayload::Usage(usage)) => usage,
            _ => Usage {
                cost_usd: None,
                ..Usage::default()
            },
        };
        cost.total.add(&usage);
        let tier = event.tier.map_or("run".to_string(), |t| t.as_str().to_string());
        cost.tiers.entry(tier).or_default().add(&usage);
        if let Some(brief) = event.brief {
            cost.briefs.entry(brief).or_default().add(&usage);
        }
    }
    cost
}

fn row(out: &mut String, label: &str, spend: &Spend) {
    let _ = writeln!(
        out,
        "  {label:<32} {:>6} {:>10} {:>10} {:>10}  {}",
        spend.calls,
        spend.input_tokens,
        spend.output_tokens,
        spend.cache_tokens,
        spend.usd_text()
    );
}

impl Cost {
    /// Each tier's spend, T1 first (a tier this build does not know last).
    pub fn tiers_in_order(&self) -> Vec<(&String, &Spend)> {
        let mut tiers: Vec<(&String, &Spend)> = self.tiers.iter().collect();
        tiers.sort_by_key(|(tier, _)| {
            tier.parse::<Tier>()
                .ok()
                .and_then(|t| Tier::ALL.iter().position(|x| *x == t))
                .unwrap_or(usize::MAX)
        });
        tiers
    }

    /// Each brief's spend, the most tokens first.
    pub fn briefs_by_spend(&self) -> Vec<(&BriefId, &Spend)> {
        let mut briefs: Vec<(&BriefId, &Spend)> = self.briefs.iter().collect();
        briefs.sort_by_key(|(_, s)| std::cmp::Reverse(s.input_tokens + s.output_tokens + s.cache_tokens));
        briefs
    }
}

/// How a cost table names a brief: `T4 add-x [1a2b3c4d]`, or its short id alone when `briefs` lacks it.
pub fn brief_label(briefs: &BTreeMap<BriefId, Brief>, id: BriefId) -> String {
    match briefs.get(&id) {
        Some(b) => format!(
            "{} {} [{}]",
            b.tier.as_str().to_ascii_uppercase(),
            b.title,
            id.short()
        ),
        None => format!("[{}]", id.short()),
    }
}

/// The cost table: per tier, then per brief (labelled by `label_of`, busiest first), then the total.
pub fn render_cost(cost: &Cost, label_of: impl Fn(BriefId) -> String) -> String {
    let mut out = String::new();
    if cost.total.calls == 0 {
        out.push_str("no model calls recorded\n");
        return out;
    }
    let header = format!(
        "  {:<32} {:>6} {:>10} {:>10} {:>10}  {}",
        "", "calls", "in", "out", "cache", "USD"
    );
    let _ = writeln!(out, "per tier\n{header}");
    for (tier, spend) in cost.tiers_in_order() {
        row(&mut out, tier, spend);
    }
    let _ = writeln!(out, "per brief\n{header}");
    for (brief, spend) in cost.briefs_by_spend() {
        row(&mut out, &label_of(*brief), spend);
    }
    row(&mut out, "total", &cost.total);
    out
}

#[cfg(test)]
mod tests {
    use agency_core::RunId;
    use chrono::Utc;
    use serde_json::{Value, json};

    use super::*;

    fn usage(tier: Tier, brief: BriefId, payload: Value) -> Event {
        Event {
            seq: 1,
            run: RunId::new(),
            ts: Utc::now(),
            brief: Some(brief),
            tier: Some(tier),
            kind: EventKind::Usage,
            payload,
        }
    }

    #[test]
    fn a_usage_record_that_does_not_read_is_unpriced_not_free() {
        let brief = BriefId::new();
        let events = [
            usage(Tier::T4, brief, json!({ "input_tokens": 10, "cost_usd": 0.5 })),
            usage(
                Tier::T4,
                brief,
                json!({ "input_tokens": "many", "cost_usd": 9.0 }),
            ),
        ];
        let cost = cost_of(&events);
        assert_eq!(cost.total.calls, 2);
        assert_eq!(cost.total.input_tokens, 10);
        assert_eq!(cost.total.usd_text(), "$0.5000 + 1 unpriced call");
    }

    #[test]
    fn an_unpriced_call_is_counted_as_unpriced_not_as_free() {
        let (plan, fix) = (BriefId::new(), BriefId::new());
        let events = [
            usage(
                Tier::T1,
                plan,
                json!({ "input_tokens": 100, "output_tokens": 10, "cost_usd": 0.5 }),
            ),
            usage(
                Tier::T4,
                fix,
                json!({ "input_tokens": 50, "output_tokens": 5, "cache_read_tokens": 7 }),
            ),
            usage(
                Tier::T4,
                fix,
                json!({ "input_tokens": 50, "output_tokens": 5, "cost_usd": 0.25 }),
            ),
        ];
        let cost = cost_of(&events);
        assert_eq!(cost.total.calls, 3);
        assert_eq!(cost.total.input_tokens, 200);
        assert_eq!(cost.total.usd_text(), "$0.7500 + 1 unpriced call");
        assert_eq!(cost.tiers["t1"].usd_text(), "$0.5000");
        assert_eq!(cost.briefs[&fix].cache_tokens, 7);
        let text = render_cost(&cost, |b| {
            if b == plan {
                "T1 plan".into()
            } else {
                "T4 fix".into()
            }
        });
        let fix_at = text.find("T4 fix").unwrap();
        assert!(
            fix_at < text.find("T1 plan").unwrap(),
            "busiest brief first:\n{text}"
        );
        assert!(text.lines().last().unwrap().contains("total"), "{text}");
    }
}
