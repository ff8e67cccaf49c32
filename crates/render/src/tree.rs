//! The `agency inspect` tree (seed 001): the run, T1's plan, then each workstream with its tiers, brief
//! statuses and open gates, so a human sees at a glance where a run stands and where it waits.
//!
//! ```text
//! Run 0192ab3c — "Build webhook ingestion system"  (running)
//! ├── T1 Plan ✓
//! │   └── [view workplan]  agency show 0192ab3c plan
//! ├── ws-backend-api
//! │   ├── [view domain boundaries]  agency show 0192ab3c boundaries ws-backend-api
//! │   ├── T3 api-squad ✓
//! │   └── T4 workers: 3/7 done, 1 retrying, 3 pending
//! └── GATE t2_synthesis: pending review
//! ```

use std::collections::BTreeMap;

use agency_core::brief::{Brief, BriefStatus};
use agency_core::gate::{Gate, GateStatus};
use agency_core::ids::RunId;
use agency_core::tier::Tier;
use agency_core::tiers::BriefRole;
use agency_review::views::View;

/// What the tree needs to know about the run itself.
#[derive(Debug, Clone)]
pub struct RunHeader {
    /// The run.
    pub id: RunId,
    /// Its goal anchor.
    pub goal: String,
    /// Its status, as text.
    pub status: String,
}

/// A node: a label and its children.
#[derive(Debug, Default)]
struct Node {
    label: String,
    children: Vec<Node>,
}

impl Node {
    fn leaf(label: String) -> Node {
        Node {
            label,
            children: Vec::new(),
        }
    }
}

/// The mark shown after a brief's title.
pub fn status_mark(status: BriefStatus) -> &'static str {
    match status {
        BriefStatus::Done => "✓",
        BriefStatus::Failed | BriefStatus::Escalated => "✗",
        BriefStatus::Running | BriefStatus::Verifying => "(active)",
        BriefStatus::Pending => "(pending)",
        BriefStatus::Cancelled => "(cancelled)",
    }
}

fn brief_label(brief: &Brief) -> String {
    let retry = if brief.attempt > 0 {
        format!("  retry {}/{}", brief.attempt, brief.retry_budget)
    } else {
        String::new()
    };
    format!(
        "{} {} {}  [{}]{}",
        brief.tier.as_str().to_ascii_uppercase(),
        brief.title,
        status_mark(brief.status),
        brief.id.short(),
        retry
    )
}

/// "3/7 done, 1 retrying, 3 pending" for a group of implementer or verifier briefs.
fn worker_summary(tier: Tier, briefs: &[&Brief]) -> String {
    let count = |pred: &dyn Fn(&Brief) -> bool| briefs.iter().filter(|b| pred(b)).count();
    let done = count(&|b| b.status == BriefStatus::Done);
    let retrying = count(&|b| b.attempt > 0 && !b.status.is_terminal());
    let active =
        count(&|b| matches!(b.status, BriefStatus::Running | BriefStatus::Verifying) && b.attempt == 0);
    let pending = count(&|b| b.status == BriefStatus::Pending && b.attempt == 0);
    let failed = count(&|b| matches!(b.status, BriefStatus::Failed | BriefStatus::Escalated));
    let noun = if tier == Tier::T4 { "workers" } else { "verifiers" };
    let mut parts = vec![format!("{done}/{} done", briefs.len())];
    for (n, word) in [
        (active, "active"),
        (retrying, "retrying"),
        (pending, "pending"),
        (failed, "failed"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    format!(
        "{} {noun}: {}",
        tier.as_str().to_ascii_uppercase(),
        parts.join(", ")
    )
}

fn gate_label(gate: &Gate) -> String {
    match gate.status {
        GateStatus::Pending => format!("GATE {}: pending review  [{}]", gate.kind, gate.id.short()),
        GateStatus::Approved => format!("GATE {}: approved", gate.kind),
        GateStatus::Rejected => {
            format!(
                "GATE {}: rejected — {}",
                gate.kind,
                gate.note.as_deref().unwrap_or("no reason given")
            )
        }
    }
}

/// The `[view …]` records a run has, listed in its tree with the command that prints each.
#[derive(Debug, Clone, Default)]
pub struct TreeViews {
    /// Whether T1 wrote a plan (`[view workplan]`, under the plan brief).
    pub plan_written: bool,
    /// The records T2 wrote, by workstream.
    pub records: BTreeMap<String, Vec<View>>,
}

/// The command that prints `view` of `ws` (seed 001's `[view …]` lines, each with how to read it).
fn view_line(run8: &str, ws: &str, view: View) -> String {
    let what = match view {
        View::Boundaries => "boundaries",
        View::Assumptions => "assumptions",
        View::Architecture => "architecture",
    };
    format!("{}  agency show {run8} {what} {ws}", view.label())
}

/// Builds the tree. Briefs of T4/T5 under one workstream are listed one by one when `expand` is set, and
/// summarised in one line otherwise (a run may have thousands). Each of `views` is listed under its brief or
/// workstream with the command that prints it.
pub fn render_tree(
    run: &RunHeader,
    briefs: &[Brief],
    gates: &[Gate],
    views: &TreeViews,
    expand: bool,
) -> String {
    let run8 = run.id.short();
    let mut root = Node {
        label: format!("Run {} — \"{}\"  ({})", run.id.short(), run.goal, run.status),
        children: vec![],
    };

    for brief in briefs.iter().filter(|b| b.tier == Tier::T1) {
        let phase = if brief.title.is_empty() {
            "T1".to_string()
        } else {
            format!("T1 {}", brief.title)
        };
        let mut node = Node::leaf(format!(
            "{phase} {}  [{}]",
            status_mark(brief.status),
            brief.id.short()
        ));
        if views.plan_written && BriefRole::of(brief) == BriefRole::Plan {
            node.children
                .push(Node::leaf(format!("[view workplan]  agency show {run8} plan")));
        }
        root.children.push(node);
    }

    // Workstreams in order of their first brief; BTreeMap keeps tiers ordered within each.
    let mut order: Vec<&str> = Vec::new();
    let mut by_ws: BTreeMap<&str, BTreeMap<Tier, Vec<&Brief>>> = BTreeMap::new();
    for brief in briefs.iter().filter(|b| b.tier != Tier::T1) {
        if !by_ws.contains_key(brief.workstream.as_str()) {
            order.push(&brief.workstream);
        }
        by_ws
            .entry(&brief.workstream)
            .or_default()
            .entry(brief.tier)
            .or_default()
            .push(brief);
    }
    for ws in order {
        let mut node = Node {
            label: ws.to_string(),
            children: views
                .records
                .get(ws)
                .into_iter()
                .flatten()
                .map(|view| Node::leaf(view_line(&run8, ws, *view)))
                .collect(),
        };
        if let Some(tiers) = by_ws.get(ws) {
            for (tier, list) in tiers {
                if matches!(tier, Tier::T4 | Tier::T5) && !expand && list.len() > 1 {
                    node.children.push(Node::leaf(worker_summary(*tier, list)));
                } else {
                    node.children
                        .extend(list.iter().map(|b| Node::leaf(brief_label(b))));
                }
            }
        }
        root.children.push(node);
    }

    for gate in gates {
        // Decided gates are history; the tree shows what waits, plus rejections worth knowing about.
        if gate.status != GateStatus::Approved {
            root.children.push(Node::leaf(gate_label(gate)));
        }
    }

    let mut out = String::new();
    out.push_str(&root.label);
    out.push('\n');
    write_children(&root.children, "", &mut out);
    out
}

fn write_children(children: &[Node], prefix: &str, out: &mut String) {
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        out.push_str(prefix);
        out.push_str(if last { "└── " } else { "├── " });
        out.push_str(&child.label);
        out.push('\n');
        let next = format!("{prefix}{}", if last { "    " } else { "│   " });
        write_children(&child.children, &next, out);
    }
}
