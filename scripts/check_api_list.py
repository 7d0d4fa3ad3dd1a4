#!/usr/bin/env python3
"""The header as the only schema of libattn's functions: checks that include/attn_c.h declares
each exported function once with ATTN_API, gives it a PFN_ pointer type right after its
declaration, and lists it once in ATTN_API_FUNCTIONS (the order of attn_api_t, whose released
members keep the order of the baseline abi/attn.abi.xml), and that these agree with the
exported symbols of abi/symbols.txt. The signatures themselves are checked by the
compilers (tests/abi/header_c99.c, header_cxx.cpp, src/capi/api_table.cc).

Usage: scripts/check_api_list.py include/attn_c.h abi/symbols.txt
"""
import os
import re
import sys


def x_list(header, macro):
    m = re.search(r"^#define %s\(X\)\s*\\\n((?:.*\\\n)*.*)$" % re.escape(macro), header, re.M)
    if m is None:
        sys.exit("FAIL: no #define %s(X) in the header" % macro)
    return re.findall(r"\bX\((attn_[a-z0-9_]+)\)", m.group(1))


def released_table(xml_path):
    """The members of attn_api (the function table) in the ABI baseline, in order."""
    xml = open(xml_path).read()
    m = re.search(r"<class-decl name='attn_api' .*?</class-decl>", xml, re.S)
    if m is None:
        sys.exit("FAIL: no class-decl attn_api in %s" % xml_path)
    return [n for n in re.findall(r"<var-decl name='(\w+)'", m.group(0)) if n != "struct_size"]


def main(header_path, symbols_path):
    header = open(header_path).read()
    problems = []
    declared = re.findall(r"^ATTN_API [^;(]*?\b(attn_[a-z0-9_]+)\(", header, re.M)
    pfn = re.findall(r"^typedef [^;]*?\(\*PFN_(attn_[a-z0-9_]+)\)\(", header, re.M)
    versions = re.findall(r"^#define ATTN_API_FUNCTIONS_(1_[0-9]+)\(X\)", header, re.M)
    listed, per_version = [], {}
    for v in versions:
        per_version[v] = x_list(header, "ATTN_API_FUNCTIONS_" + v)
        listed += per_version[v]
    everything = re.search(r"^#define ATTN_API_FUNCTIONS\(X\) (.*)$", header, re.M)
    expected_all = " ".join("ATTN_API_FUNCTIONS_%s(X)" % v for v in versions)
    if everything is None or everything.group(1).strip() != expected_all:
        problems.append("ATTN_API_FUNCTIONS(X) must be exactly: " + expected_all)
    exported = [line.split("@@")[0] for line in open(symbols_path)
                if line.strip() and not line.startswith("#")]

    def dups(names, what):
        seen = set()
        for n in names:
            if n in seen:
                problems.append("%s twice in %s" % (n, what))
            seen.add(n)
    dups(declared, "the ATTN_API declarations")
    dups(pfn, "the PFN_ typedefs")
    dups(listed, "ATTN_API_FUNCTIONS")
    for n in declared:
        if n not in pfn:
            problems.append("%s has no PFN_%s typedef" % (n, n))
        if n not in listed:
            problems.append("%s is not in ATTN_API_FUNCTIONS (append it to the list of the "
                            "current minor version)" % n)
        if n not in exported:
            problems.append("%s is declared but not in %s" % (n, symbols_path))
    for n in pfn:
        if n not in declared:
            problems.append("PFN_%s has no ATTN_API declaration" % n)
        else:
            # right after its declaration: the declaration's ';', an optional doc line, the typedef
            decl = re.search(r"^ATTN_API [^;(]*?\b%s\([^;]*;\n(/\*\*[^\n]*\*/\n)?typedef [^;]*"
                             r"\(\*PFN_%s\)" % (n, n), header, re.M)
            if decl is None:
                problems.append("PFN_%s does not follow the declaration of %s" % (n, n))
    for n in listed:
        if n not in declared:
            problems.append("%s is in ATTN_API_FUNCTIONS but not declared" % n)
    for n in exported:
        if n not in declared:
            problems.append("%s is exported but not declared with ATTN_API" % n)
    # The released members of attn_api_t keep their places: the lists start with the members of
    # attn_api in the ABI baseline (abi/attn.abi.xml, beside the symbol list), in its order. (The
    # header declares the functions in the order a reader wants them, not the table's.)
    baseline = released_table(os.path.join(os.path.dirname(symbols_path), "attn.abi.xml"))
    if listed[:len(baseline)] != baseline:
        i = next(i for i, (a, b) in enumerate(zip(listed + [""] * len(baseline), baseline))
                 if a != b)
        problems.append("ATTN_API_FUNCTIONS moves a released member of attn_api_t: member %d is "
                        "%s in abi/attn.abi.xml, %s in the header"
                        % (i + 1, baseline[i], (listed + ["(nothing)"] * len(baseline))[i]))
    if problems:
        print("FAIL: the header's function list is inconsistent:")
        for p in problems:
            print("  " + p)
        return 1
    print("OK: %d functions, each declared once, with its PFN_ type, in ATTN_API_FUNCTIONS "
          "(%s) and exported" % (len(declared),
                                 ", ".join("%s: %d" % (v.replace("_", "."), len(per_version[v]))
                                           for v in versions)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
