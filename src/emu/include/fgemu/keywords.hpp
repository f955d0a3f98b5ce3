// MSL address-space and function qualifiers as C++ macros. The scanner (msl_scan.py) has
// already rewritten the two context-dependent uses: a `threadgroup` variable declaration
// becomes _FG_TG_VAR_ (one copy per threadgroup: all fibers of a group run on one OS thread)
// and a program-scope `constant` becomes _FG_CST_.
#pragma once

#define kernel
#define vertex
#define fragment
#define device
#define constant
#define thread
#define threadgroup
#define threadgroup_imageblock
#define ray_data
#define object_data
#define _FG_TG_VAR_ static thread_local
#define _FG_CST_ static const
#define _FG_FC__
