#include "limits/nft_answers.h"

#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>

namespace agentd {
namespace {

bool Attributes(NetlinkSpan payload, NetlinkAttrs* a) {
  if (payload.len < sizeof(struct nfgenmsg)) return false;
  size_t skip = NLMSG_ALIGN(sizeof(struct nfgenmsg));
  return a->Parse({payload.data + skip, payload.len - skip});
}

// One expression (name and data): its counter's packets; others are skipped.
bool ReadExpr(NetlinkSpan expr, NftElement* e) {
  NetlinkAttrs x, data;
  if (!x.Parse(expr) || !data.Parse(x.Get(NFTA_EXPR_DATA))) return false;
  std::string name = x.String(NFTA_EXPR_NAME);
  if (name == "counter") e->packets = data.Be64(NFTA_COUNTER_PACKETS);
  return true;
}

bool ReadElement(NetlinkSpan elem, NftElement* e) {
  NetlinkAttrs a, key;
  if (!a.Parse(elem) || !key.Parse(a.Get(NFTA_SET_ELEM_KEY))) return false;
  NetlinkSpan k = key.Get(NFTA_DATA_VALUE);
  e->key.assign(k.data, k.data + k.len);
  e->expiration_ms = a.Be64(NFTA_SET_ELEM_EXPIRATION);
  bool ok = true;
  if (a.Has(NFTA_SET_ELEM_EXPR)) ok = ReadExpr(a.Get(NFTA_SET_ELEM_EXPR), e);
  // More than one expression: a list of them.
  return ok &&
         ForEachAttr(a.Get(NFTA_SET_ELEM_EXPRESSIONS),
                     [&](uint16_t type, NetlinkSpan x) {
                       if (type == NFTA_LIST_ELEM) ok = ReadExpr(x, e) && ok;
                     }) &&
         ok;
}

}  // namespace

bool ParseSetElements(NetlinkSpan payload, std::vector<NftElement>* out) {
  NetlinkAttrs a;
  if (!Attributes(payload, &a)) return false;
  bool ok = true;
  return ForEachAttr(a.Get(NFTA_SET_ELEM_LIST_ELEMENTS),
                     [&](uint16_t type, NetlinkSpan elem) {
                       if (type != NFTA_LIST_ELEM) return;
                       NftElement e;
                       if (ReadElement(elem, &e)) {
                         out->push_back(std::move(e));
                       } else {
                         ok = false;
                       }
                     }) &&
         ok;
}

bool AddFirstCounter(NetlinkSpan payload, uint64_t* packets) {
  NetlinkAttrs a;
  if (!Attributes(payload, &a)) return false;
  bool first = true, ok = true;
  ok = ForEachAttr(a.Get(NFTA_RULE_EXPRESSIONS),
                   [&](uint16_t type, NetlinkSpan expr) {
                     if (type != NFTA_LIST_ELEM || !first) return;
                     first = false;
                     NftElement e;
                     NetlinkAttrs x;
                     ok = x.Parse(expr) && ReadExpr(expr, &e);
                     if (ok && x.String(NFTA_EXPR_NAME) == "counter") *packets += e.packets;
                   }) &&
       ok;
  return ok;
}

bool ChainOfTable(NetlinkSpan payload, const std::string& table, std::string* name) {
  NetlinkAttrs a;
  if (!Attributes(payload, &a)) return false;
  *name = a.String(NFTA_CHAIN_TABLE) == table ? a.String(NFTA_CHAIN_NAME) : "";
  return true;
}

}  // namespace agentd
