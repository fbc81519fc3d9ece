# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (C) 2026 The fabric-monitor authors
#
# One-way delay between two minicluster members.  All namespaces share one
# system clock, so the receiver can subtract the send time carried in each
# datagram from its own clock.
#   perl owd.pl recv ADDR PORT COUNT     prints "RECEIVED MEDIAN_MS ROBUST_SD_MS MEAN_MS SD_MS"
# The median and 1.4826 x the median absolute deviation estimate the delay and
# its jitter without being thrown off by scheduling hiccups on a busy machine.
#   perl owd.pl send ADDR PORT COUNT INTERVAL_S
use strict;
use warnings;
use IO::Socket::INET;
use Time::HiRes qw(time sleep);

my ($mode, $addr, $port, $count, $interval) = @ARGV;
die "usage: owd.pl recv|send ADDR PORT COUNT [INTERVAL]\n" unless $mode && $count;
if ($mode eq 'recv') {
    my $s = IO::Socket::INET->new(LocalAddr => $addr, LocalPort => $port, Proto => 'udp')
        or die "owd: bind $addr:$port: $!\n";
    my @d;
    local $SIG{ALRM} = sub { die "timeout\n" };
    eval {
        alarm 20;
        while (@d < $count) {
            my $buf;
            $s->recv($buf, 64) // last;
            my $now = time;
            next unless $buf =~ /^fm-owd (\d+\.\d+)$/;
            push @d, ($now - $1) * 1000;
            alarm 3;    # the sender is done once nothing comes for a while
        }
        alarm 0;
    };
    my $n = @d;
    my $median = sub {
        my @s = sort { $a <=> $b } @_;
        return 0 unless @s;
        return @s % 2 ? $s[$#s / 2] : ($s[@s / 2 - 1] + $s[@s / 2]) / 2;
    };
    my $med = $median->(@d);
    my $mad = $median->(map { abs($_ - $med) } @d);
    my $mean = 0;
    $mean += $_ / ($n || 1) for @d;
    my $var = 0;
    $var += ($_ - $mean) ** 2 / ($n > 1 ? $n - 1 : 1) for @d;
    printf "%d %.3f %.3f %.3f %.3f\n", $n, $med, 1.4826 * $mad, $mean, sqrt($var);
} elsif ($mode eq 'send') {
    my $s = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => $port, Proto => 'udp')
        or die "owd: $addr:$port: $!\n";
    for (1 .. $count) {
        $s->send(sprintf("fm-owd %.6f", time));
        sleep($interval // 0.01);
    }
} else {
    die "owd: unknown mode $mode\n";
}
