#include "ovsdb/ovs_ops.h"

namespace okna::ovsdb {

std::string describe(const OvsOp& op) {
  switch (op.kind) {
    case OvsOp::Kind::SetExternalId:
      return "set external_ids:" + op.a + "=" + op.b;
    case OvsOp::Kind::DeleteExternalId:
      return "delete external_ids:" + op.a;
    case OvsOp::Kind::AddBridge:
      return "add bridge " + op.a + (op.b.empty() ? "" : " (datapath_type " + op.b + ")");
    case OvsOp::Kind::AddPort:
      return "add port " + op.b + " to bridge " + op.a;
    case OvsOp::Kind::DeletePort:
      return "delete port " + op.b + " from bridge " + op.a;
    case OvsOp::Kind::DeleteBridge:
      return "delete bridge " + op.a;
    case OvsOp::Kind::AddIfacePort:
      return "add port " + op.b + " to bridge " + op.a + " (external_ids " + op.c + ")";
    case OvsOp::Kind::SetIfaceExternalIds:
      return "set Interface " + op.b + " external_ids " + op.c;
    case OvsOp::Kind::SetBridgeDatapathType:
      return "set Bridge " + op.a + " datapath_type=" + op.b;
  }
  return "?";
}

}  // namespace okna::ovsdb
