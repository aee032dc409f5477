#ifndef ACTORFLOW_ACTOR_ACTOR_MSG_H_
#define ACTORFLOW_ACTOR_ACTOR_MSG_H_

#include <cstdint>
#include <type_traits>

namespace actorflow::internal {

class Register;

enum class ActorMsgKind : uint8_t {
  // Producer -> consumer: `reg` holds piece `piece_id`; `slot` is the
  // consumer's input slot for its descriptor.
  kRegisterReady,
  // Consumer -> producer: the consumer is done reading `reg`; `slot` is
  // the producer's output slot for its descriptor.
  kRegisterReturn,
  // Producer -> consumer: no more pieces will come on input `slot`.
  kEord,
  // Runtime -> actor: see ActorCmd.
  kCmd,
};

enum class ActorCmd : uint8_t {
  kNone,
  kConstruct,     // build the actor on its own thread
  kReset,         // get ready for another run (see Actor)
  kStart,         // sources begin producing
  kAsyncFailed,   // a kernel on the actor's asynchronous stream failed
  kFed,           // a feed's caller submitted a register or closed the feed
  kWake,          // look again whether to act or end (the run is aborting)
  kDescribe,      // the session takes a snapshot of the actor (hang report)
  kSaveState,     // the session takes the kernel's state (a checkpoint)
  kRestoreState,  // the session gives the kernel its state back (a restore)
  kHoldSupply,    // a plain source makes no new piece until kEndSupply
  kEndSupply,     // a plain source's run ends before piece_id; hold released
};

// The commands the session handles on the actor's thread (ThreadActors
// routes them there); every other message goes to the actor itself.
constexpr bool IsSessionCmd(ActorCmd cmd) {
  return cmd == ActorCmd::kConstruct || cmd == ActorCmd::kDescribe ||
         cmd == ActorCmd::kSaveState || cmd == ActorCmd::kRestoreState ||
         cmd == ActorCmd::kHoldSupply;
}

// The only thing actors exchange: small, trivially copyable, no ownership.
//
// A ready message carries the piece id so that the consumer need not read
// it off the register: the producer writes the register's piece id on every
// act, and reading it from another thread would move that cache line there
// and back on each hop (see Register).
struct ActorMsg {
  Register* reg = nullptr;
  int64_t piece_id = 0;  // kRegisterReady; kEndSupply: where the run ends
  int32_t dst = 0;       // dense actor index
  int16_t slot = 0;
  ActorMsgKind kind = ActorMsgKind::kCmd;
  ActorCmd cmd = ActorCmd::kNone;

  static ActorMsg Ready(int32_t dst, int16_t slot, Register* reg,
                        int64_t piece_id) {
    return ActorMsg{reg,
                    piece_id,
                    dst,
                    slot,
                    ActorMsgKind::kRegisterReady,
                    ActorCmd::kNone};
  }
  static ActorMsg Return(int32_t dst, int16_t slot, Register* reg) {
    return ActorMsg{
        reg, 0, dst, slot, ActorMsgKind::kRegisterReturn, ActorCmd::kNone};
  }
  static ActorMsg Eord(int32_t dst, int16_t slot) {
    return ActorMsg{nullptr,        0, dst, slot, ActorMsgKind::kEord,
                    ActorCmd::kNone};
  }
  static ActorMsg Cmd(int32_t dst, ActorCmd cmd) {
    return ActorMsg{nullptr, 0, dst, 0, ActorMsgKind::kCmd, cmd};
  }
  static ActorMsg EndSupply(int32_t dst, int64_t piece) {
    return ActorMsg{
        nullptr, piece, dst, 0, ActorMsgKind::kCmd, ActorCmd::kEndSupply};
  }
};

static_assert(std::is_trivially_copyable_v<ActorMsg>);
// With a channel slot's sequence word, 32 bytes: two slots per cache line.
static_assert(sizeof(ActorMsg) == 24);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_ACTOR_MSG_H_
