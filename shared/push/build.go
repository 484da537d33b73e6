package push

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"onorca.dev/push/shared/contract"
)

// SummaryTitle is the title of every summary (reference-behaviour §5.3).
const SummaryTitle = "Orca"

// Build makes the message for one batch: host is the sending host's
// fingerprint, members the batch's notifications in arrival order, and
// deadline the batch's deadline in epoch milliseconds. A single member keeps
// its title and body; several make a summary titled [SummaryTitle] that
// carries the latest member's routing fields (reference-behaviour §5.3), Gen
// D's paneKey and executionHost among them; its urgency is its most urgent
// member's. The collapse id follows §5.4.
// Build panics if members is empty.
func Build(host string, members []contract.Notification, deadline int64) Message {
	latest := &members[len(members)-1]
	m := Message{
		Kind:              latest.EffectiveKind(),
		Title:             latest.Title,
		Body:              latest.Body,
		Silent:            latest.Silent(),
		Deadline:          deadline,
		HostFingerprint:   host,
		WorktreeID:        latest.WorktreeID,
		NotificationID:    latest.NotificationID,
		NotificationSeq:   latest.Seq,
		NotificationEpoch: latest.Epoch,
		Source:            latest.Source,
		AgentState:        latest.AgentState,
		CoalescedCount:    len(members),
		PaneKey:           latest.PaneKey,
		ExecutionHost:     latest.ExecutionHost,
		Sealed:            latest.Sealed(),
		Urgency:           urgency(members),
	}
	if len(members) > 1 {
		m.Title = SummaryTitle
		m.Body = summaryBody(members)
		if CanSummarize(members) {
			m.SummaryMembers = make([]Member, len(members))
			for i := range members {
				m.SummaryMembers[i] = Member{
					NotificationID:    members[i].NotificationID,
					NotificationEpoch: members[i].Epoch,
					NotificationSeq:   members[i].Seq,
				}
			}
		}
	}
	m.CollapseID = collapseID(&m)
	return m
}

// urgency is the most urgent member's: empty (high) when any member is
// high, else UrgencyNormal.
func urgency(members []contract.Notification) contract.Urgency {
	for i := range members {
		if members[i].EffectiveUrgency() == contract.UrgencyHigh {
			return ""
		}
	}
	return contract.UrgencyNormal
}

// CanSummarize reports whether members may form one summary with
// summaryMembers: MinSummaryMembers..MaxBatchMembers of them, every one with
// a notificationId and none a dismissal (reference-behaviour §5.2, first
// condition; the payload budget is the caller's second condition).
func CanSummarize(members []contract.Notification) bool {
	if len(members) < contract.MinSummaryMembers || len(members) > contract.MaxBatchMembers {
		return false
	}
	for i := range members {
		if members[i].NotificationID == "" || members[i].EffectiveKind() == contract.KindDismiss {
			return false
		}
	}
	return true
}

// summaryBody is "<N> agents need attention" when any member needs input,
// else "<N> updates" (reference-behaviour §5.3).
func summaryBody(members []contract.Notification) string {
	n := strconv.Itoa(len(members))
	for i := range members {
		if members[i].AgentState == contract.AgentNeedsInput {
			return n + " agents need attention"
		}
	}
	return n + " updates"
}

// collapseID follows reference-behaviour §5.4: a summary with members hashes
// [host, summaryMembers], a single event with an id hashes [host, id], and
// anything else collapses per host. The hashed JSON is written as
// JSON.stringify writes it, so ids match the original gateway's.
func collapseID(m *Message) string {
	var b []byte
	switch {
	case len(m.SummaryMembers) > 0:
		b = append(b, '[')
		b = contract.AppendJSString(b, m.HostFingerprint)
		b = append(b, ',')
		b = appendMembersJSON(b, m.SummaryMembers)
		b = append(b, ']')
	case m.CoalescedCount == 1 && m.NotificationID != "":
		b = append(b, '[')
		b = contract.AppendJSString(b, m.HostFingerprint)
		b = append(b, ',')
		b = contract.AppendJSString(b, m.NotificationID)
		b = append(b, ']')
	default:
		return "host:" + m.HostFingerprint
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
