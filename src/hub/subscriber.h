// What the hub needs from a client connection to deliver to it. Implemented by
// session::ClientSession; every method is called on the subscriber's loop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "net/out_frame.h"
#include "protocol/client_op.h"

namespace parley::hub {

class Subscriber {
 public:
  virtual ~Subscriber() = default;
  virtual uint64_t conn_id() const = 0;
  virtual const std::string& user_id() const = 0;
  virtual unsigned loop() const = 0;
  // The connection is closed or closing: deliver nothing more.
  virtual bool gone() const = 0;
  // How its frames are written: the fan-out encodes a batch once per
  // encoding its members use (PROTOCOL.md "Binary encoding: MessagePack").
  virtual protocol::Encoding encoding() const { return protocol::Encoding::kJson; }
  // It asked for state deltas (hello caps, PROTOCOL.md "State deltas"): in a
  // namespace with state_delta its states come as `sd` frames where it can.
  virtual bool state_deltas() const { return false; }
  // And batched (PROTOCOL.md "Batched state deltas"): its deltas of one tick
  // come as entries of `sds` frames instead of `sd` frames.
  virtual bool state_delta_batch() const { return false; }
  // Queues a frame, taking it. The subscriber disconnects itself when it
  // cannot keep up.
  virtual void send(net::OutFrame&& frame) = 0;
  // It holds corked frames of its own (an ack: net::Connection::send_corked),
  // which the fan-out drain's flush point writes before other deliveries.
  virtual bool corked() const { return false; }

 private:
  friend class TickBatcher;
  // The TickBatcher of the subscriber's loop marks it while assembling a tick:
  // in flush number fanout_flush_, its frame is assembly fanout_slot_.
  uint64_t fanout_flush_ = 0;
  uint32_t fanout_slot_ = 0;
};

using SubscriberRef = std::shared_ptr<Subscriber>;

}  // namespace parley::hub
