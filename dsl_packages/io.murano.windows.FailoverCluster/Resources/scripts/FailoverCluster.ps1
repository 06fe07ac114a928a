# Failover cluster steps. Cluster cmdlets need a domain identity; they run in
# a job started with the domain credentials, so the agent service itself keeps
# its own account and WinRM trust settings are left alone.

function Invoke-AsDomainUser {
    param(
        [Parameter(Mandatory = $true)][hashtable]$Credentials,
        [Parameter(Mandatory = $true)][scriptblock]$ScriptBlock,
        [object[]]$ArgumentList = @()
    )
    $credential = New-DomainCredential -DomainName $Credentials.DomainName `
        -UserName $Credentials.UserName -Password $Credentials.Password
    $job = Start-Job -Credential $credential -ScriptBlock $ScriptBlock -ArgumentList $ArgumentList
    try {
        Wait-Job -Job $job | Out-Null
        if ($job.State -ne 'Completed') {
            $reason = $job.ChildJobs[0].JobStateInfo.Reason
            throw "The clustering command did not complete: $reason"
        }
        return Receive-Job -Job $job -ErrorAction Stop
    } finally {
        Remove-Job -Job $job -Force
    }
}

function Test-AddressInLocalSubnet {
    param([Parameter(Mandatory = $true)][string]$Address)
    $target = [System.Net.IPAddress]::Parse($Address).GetAddressBytes()
    foreach ($local in Get-NetIPAddress -AddressFamily IPv4) {
        if ($local.IPAddress -eq '127.0.0.1') { continue }
        $bytes = [System.Net.IPAddress]::Parse($local.IPAddress).GetAddressBytes()
        $bits = [int]$local.PrefixLength
        $same = $true
        for ($i = 0; $i -lt 4; $i++) {
            $take = [Math]::Max(0, [Math]::Min(8, $bits - 8 * $i))
            $mask = [byte]((0xFF -shl (8 - $take)) -band 0xFF)
            if (($bytes[$i] -band $mask) -ne ($target[$i] -band $mask)) { $same = $false; break }
        }
        if ($same) { return $true }
    }
    return $false
}

function Enable-SharedAddresses {
    param([Parameter(Mandatory = $true)][string[]]$Addresses)
    foreach ($address in $Addresses) {
        if (-not (Test-AddressInLocalSubnet -Address $address)) {
            throw "Shared address $address is not in a subnet of this node"
        }
    }
    foreach ($rule in @(
            @{Name = 'Murano-Cluster-TCP'; Protocol = 'TCP'; Port = @('3343', '445', '135')},
            @{Name = 'Murano-Cluster-UDP'; Protocol = 'UDP'; Port = @('3343')})) {
        if (-not (Get-NetFirewallRule -Name $rule.Name -ErrorAction SilentlyContinue)) {
            New-NetFirewallRule -Name $rule.Name -DisplayName $rule.Name -Direction Inbound `
                -Protocol $rule.Protocol -LocalPort $rule.Port -Action Allow | Out-Null
        }
    }
    Write-MuranoLog "Shared addresses checked: $($Addresses -join ', ')"
    return $Addresses
}

function Install-FailoverClusterPrerequisites {
    $restart = Install-FeatureIfMissing -Name @('Failover-Clustering', 'RSAT-Clustering-PowerShell')
    Write-MuranoLog "Failover clustering features present (restart needed: $restart)"
    return $restart
}

function New-FailoverCluster {
    param(
        [Parameter(Mandatory = $true)][string]$ClusterName,
        [Parameter(Mandatory = $true)][string]$StaticAddress,
        [Parameter(Mandatory = $true)][hashtable]$Credentials
    )
    $name = Invoke-AsDomainUser -Credentials $Credentials -ArgumentList @($ClusterName, $StaticAddress) -ScriptBlock {
        param($ClusterName, $StaticAddress)
        Import-Module FailoverClusters
        $existing = Get-Cluster -Name $ClusterName -ErrorAction SilentlyContinue
        if ($null -eq $existing) {
            $existing = New-Cluster -Name $ClusterName -Node $env:COMPUTERNAME `
                -StaticAddress $StaticAddress -NoStorage -Force
        }
        $existing.Name
    }
    Write-MuranoLog "Failover cluster $ClusterName is up at $StaticAddress"
    return [string]$name
}

function Add-FailoverClusterNode {
    param(
        [Parameter(Mandatory = $true)][string]$ClusterName,
        [Parameter(Mandatory = $true)][string]$MasterNode,
        [Parameter(Mandatory = $true)][hashtable]$Credentials
    )
    Invoke-AsDomainUser -Credentials $Credentials -ArgumentList @($ClusterName, $MasterNode) -ScriptBlock {
        param($ClusterName, $MasterNode)
        Import-Module FailoverClusters
        $members = @(Get-ClusterNode -Cluster $MasterNode | ForEach-Object { $_.Name })
        if ($members -notcontains $env:COMPUTERNAME) {
            Add-ClusterNode -Cluster $ClusterName -Name $env:COMPUTERNAME -NoStorage | Out-Null
        }
    } | Out-Null
    Write-MuranoLog "This node is a member of cluster $ClusterName"
    return $env:COMPUTERNAME
}

function Set-ClusterMaster {
    param(
        [Parameter(Mandatory = $true)][string]$ClusterName,
        [Parameter(Mandatory = $true)][string]$MasterNode,
        [string]$MasterAddress = '',
        [string]$ClusterAddress = ''
    )
    $key = 'HKLM:\SOFTWARE\Murano\Cluster'
    if (-not (Test-Path -LiteralPath $key)) { New-Item -Path $key -Force | Out-Null }
    Set-ItemProperty -LiteralPath $key -Name ClusterName -Value $ClusterName
    Set-ItemProperty -LiteralPath $key -Name MasterNode -Value $MasterNode
    Set-ItemProperty -LiteralPath $key -Name MasterAddress -Value $MasterAddress
    Set-ItemProperty -LiteralPath $key -Name ClusterAddress -Value $ClusterAddress
    Write-MuranoLog "Cluster $ClusterName master is $MasterNode"
    return ($env:COMPUTERNAME -eq $MasterNode)
}
